package extension

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	pluginJSON  = `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "hello-plugin", "version": "1.0.0", "description": "Greets."}`
	pluginMCP   = `{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"greeter": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/s.mjs"]}}}`
	pluginSkill = "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n"
)

func pluginFiles() map[string]string {
	return map[string]string{"plugin.json": pluginJSON, "mcp.json": pluginMCP, "skills/greet/SKILL.md": pluginSkill, "s.mjs": "//\n",
		// What Gemini CLI would read in an extension's folder, and an
		// Agent Plugins plugin does not have.
		"hooks/hooks.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}`, "GEMINI.md": "context"}
}

// TestPluginInstalled: a plugin from a folder, from a git URL or linked
// lands in gemkit's plugins folder, never in Gemini CLI's extensions
// folder, and is listed and got as an extension is, with its servers as
// written, its skill, and none of Gemini CLI's parts.
func TestPluginInstalled(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, pluginFiles())
	_, url := gitRepo(t, pluginFiles())
	for _, how := range []string{"folder", "git", "link"} {
		t.Run(how, func(t *testing.T) {
			s := newStore(t)
			var err error
			switch how {
			case "folder":
				_, err = s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
			case "git":
				_, err = s.Install(context.Background(), InstallRequest{Source: url, Consent: yes})
			default:
				_, err = s.Link(context.Background(), src, yes)
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := entries(t, s); len(names) != 0 {
				t.Errorf("the extensions folder holds %v", names)
			}
			if _, err := os.Stat(filepath.Join(s.PluginsDir(), "hello-plugin")); err != nil {
				t.Errorf("not in the plugins folder: %v", err)
			}
			all, err := s.List()
			if err != nil || len(all) != 1 {
				t.Fatalf("list: %v, %v", all, err)
			}
			in := all[0]
			ext := in.Extension
			if in.Err != nil || !ext.IsPlugin() || !in.Manifest().AgentPlugin || in.Manifest().Version != "1.0.0" {
				t.Fatalf("%+v, %v", in, in.Err)
			}
			if got := string(in.Manifest().MCPServers["greeter"]); got != `{"command":"node","args":["${PLUGIN_ROOT}/s.mjs"]}` {
				t.Errorf("the server as an extension's: %s", got)
			}
			if sk := ext.Skills(); len(sk) != 1 || sk[0].Name != "greet" {
				t.Errorf("skills %v", sk)
			}
			if hooks, _ := ext.CommandHooks(); len(hooks) != 0 || len(ext.ContextFiles) != 0 {
				t.Errorf("hooks %v, context %v", hooks, ext.ContextFiles)
			}
			if _, err := s.Get("hello-plugin"); err != nil {
				t.Error(err)
			}
			if err := s.checkFree("hello-plugin"); err == nil {
				t.Error("the name is free while the plugin is installed")
			}
		})
	}
}

// TestPluginAndExtensionNames: one name is one thing, whichever folder
// it is in.
func TestPluginAndExtensionNames(t *testing.T) {
	s := newStore(t)
	src := t.TempDir()
	writeTree(t, src, pluginFiles())
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	ext := t.TempDir()
	writeTree(t, ext, map[string]string{ManifestFile: manifestJSON("hello-plugin", "2.0.0", "")})
	if _, err := s.Install(context.Background(), InstallRequest{Source: ext, Consent: yes}); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("an extension of the plugin's name: %v", err)
	}
}

// TestPluginUpdateKeepsItsKind: a new version that is an extension does
// not replace a plugin.
func TestPluginUpdateKeepsItsKind(t *testing.T) {
	s := newStore(t)
	dir, url := gitRepo(t, pluginFiles())
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "plugin.json"))
	commitFiles(t, dir, map[string]string{ManifestFile: manifestJSON("hello-plugin", "2.0.0", "")}, "an extension now")
	_, err := s.Update(context.Background(), "hello-plugin", UpdateRequest{Consent: yes})
	if err == nil || !strings.Contains(err.Error(), "it is an Agent Plugins plugin (plugin.json alone), and its new version is a Gemini CLI extension") {
		t.Errorf("update: %v", err)
	}
}
