package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginInstallSaysSkips: an Agent Plugins plugin whose mcp.json has
// a server the specification skips (no type, §7.2.2) is installed, and
// the install says at once which server is left out and why, where the
// person looks; before, only describe and validate said it.
func TestPluginInstallSaysSkips(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "hello")
	writeFiles(t, src, map[string]string{
		"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "hello-plugin", "version": "1.0.0"}`,
		"mcp.json":    `{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"hello": {"command": "node", "args": ["s.js"]}}}`,
	})
	stdout, stderr, code := e.run("install", src, "--consent")
	if code != ExitOK {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Not all of hello-plugin is served", "mcpServers.hello: it has no type: this server is skipped (§7.2.2)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in the install's words:\n%s\n%s", want, stdout, stderr)
		}
	}
}
