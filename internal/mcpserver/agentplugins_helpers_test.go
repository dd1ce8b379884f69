package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"
)

// The Agent Plugins 1.0.0 plugin of the tests with real agents: a skill
// and a stdio node server (testdata/agentplugin/server.mjs), as the
// specification's layout has them (spec/1.0.0.md §4.2).
const (
	helloPluginJSON = `{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "hello-plugin",
  "version": "1.0.0",
  "description": "Greets people, from an Agent Plugins 1.0 plugin."
}
`
	helloMCPJSON = `{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "greeter": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/server.mjs"]}
  }
}
`
	helloSkill = `---
name: greet
description: Greet the person warmly from the hello plugin.
---

Say "hello-skill-5093" first, then greet the person by name.
`
)

// pluginSource writes a plugin's folder, files (name → content) over
// the hello plugin's, and returns it.
func pluginSource(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	server, err := os.ReadFile(filepath.Join("testdata", "agentplugin", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"plugin.json": helloPluginJSON, "mcp.json": helloMCPJSON, "skills/greet/SKILL.md": helloSkill, "server.mjs": string(server)}
	for k, v := range files {
		all[k] = v
	}
	for rel, body := range all {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(rel)), body, 0o644)
	}
	return dir
}
