package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// runPlugins runs gemkit plugins with args in a Claude Code home of its
// own (CLAUDE_CONFIG_DIR) and the working folder cwd.
func runPlugins(t *testing.T, cfg, cwd string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	a.lookupEnv = func(k string) (string, bool) {
		switch k {
		case "CLAUDE_CONFIG_DIR":
			return cfg, true
		case "HOME":
			return filepath.Dir(cfg), true
		}
		return "", false
	}
	a.cwd = cwd
	code = run(context.Background(), append([]string{"plugins"}, args...), a)
	return out.String(), errb.String(), code
}

// writePluginFiles writes files (slash paths to contents) under dir.
func writePluginFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pluginFiles is a plugin with one part of each kind.
func pluginFiles(name string) map[string]string {
	return map[string]string{
		name + "/.claude-plugin/plugin.json": `{"name":"` + name + `","version":"1.2.3"}`,
		name + "/.mcp.json":                  `{"mcpServers":{"srv":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/s.js"]}}}`,
		name + "/hooks/hooks.json":           `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hi"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true"}]}]}}`,
		name + "/.lsp.json":                  `{"go":{"command":"gopls","extensionToLanguage":{".go":"go"}}}`,
		name + "/monitors/monitors.json":     `[{"name":"watch","command":"tail -f x"}]`,
		name + "/skills/s1/SKILL.md":         "---\nname: s1\ndescription: a skill\n---\nbody\n",
		name + "/agents/a1.md":               "---\nname: a1\ndescription: an agent\n---\nbody\n",
		name + "/commands/c1.md":             "---\ndescription: a command\n---\nbody\n",
	}
}

// TestPluginsRealClaude installs two plugins with the real Claude Code
// 2.1.330 from a directory marketplace, offline, one for the user and
// one for a project, and checks that gemkit plugins list --json shows
// each with its parts and the scope that enables it.
func TestPluginsRealClaude(t *testing.T) {
	gemkittest.SkipShort(t, "the real Claude Code")
	claude := claudetest.Binary(t)
	dir := t.TempDir()
	cfg, mkt, proj := filepath.Join(dir, "home", ".claude"), filepath.Join(dir, "mkt"), filepath.Join(dir, "proj")
	files := map[string]string{".claude-plugin/marketplace.json": `{"name":"localmk","owner":{"name":"t"},"plugins":[{"name":"pu","source":"./pu"},{"name":"pp","source":"./pp"}]}`}
	for _, name := range []string{"pu", "pp"} {
		for k, v := range pluginFiles(name) {
			files[k] = v
		}
	}
	writePluginFiles(t, mkt, files)
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plugin", "marketplace", "add", mkt}, {"plugin", "install", "pu@localmk"}, {"plugin", "install", "pp@localmk", "--scope", "project"}} {
		cmd := exec.CommandContext(t.Context(), claude, args...)
		cmd.Dir = proj
		cmd.Env = []string{"HOME=" + filepath.Dir(cfg), "CLAUDE_CONFIG_DIR=" + cfg, "PATH=" + os.Getenv("PATH"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, errOut, code := runPlugins(t, cfg, proj, "list", "--json")
	if code != ExitOK {
		t.Fatalf("gemkit plugins list --json: exit %d\n%s%s", code, out, errOut)
	}
	var h claudeplugin.Home
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]string{"pu@localmk": "user", "pp@localmk": "project"}
	if len(h.Plugins) != len(want) {
		t.Fatalf("plugins %d, want %d:\n%s", len(h.Plugins), len(want), out)
	}
	for _, p := range h.Plugins {
		checkPluginParts(t, p, want[p.ID])
		// Claude Code runs a directory marketplace's plugin in place.
		if p.Root != filepath.Join(mkt, p.Name) {
			t.Errorf("%s: read from %s, want the marketplace's folder", p.ID, p.Root)
		}
	}
}

// checkPluginParts checks that p has every part pluginFiles gives it,
// unconfined, and is enabled in scope.
func checkPluginParts(t *testing.T, p claudeplugin.Plugin, scope string) {
	t.Helper()
	if s, on := p.EnabledNow(); !on || s.Scope != scope {
		t.Errorf("%s: enabled %+v, want in %s", p.ID, p.Enabled, scope)
	}
	if p.Unreadable != "" || p.Version != "1.2.3" || p.Runs != claudeplugin.Runs {
		t.Errorf("%s: unreadable %q, version %q, runs %q", p.ID, p.Unreadable, p.Version, p.Runs)
	}
	got := []int{len(p.Servers), len(p.Hooks), len(p.LSP), len(p.Monitors), len(p.Skills), len(p.Agents), len(p.Commands)}
	if want := []int{1, 2, 1, 1, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("%s: parts (servers, hooks, lsp, monitors, skills, agents, commands) %v, want %v", p.ID, got, want)
	}
	if len(p.Servers) == 1 && (p.Servers[0].Name != "srv" || p.Servers[0].Command != "node") {
		t.Errorf("%s: server %+v", p.ID, p.Servers[0])
	}
}

// TestPluginsListDescribeText checks the words: each part said to run
// unconfined, an unreadable plugin said so, an unknown one an error.
func TestPluginsListDescribeText(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".claude")
	files := pluginFiles("p")
	files["bad/.mcp.json"] = `{"mcpServers":`
	files[".claude/settings.json"] = `{"enabledPlugins":{"p@mk":true}}`
	files[".claude/plugins/installed_plugins.json"] = `{"version":2,"plugins":{"p@mk":[{"scope":"user","installPath":"` + filepath.Join(dir, "p") + `","version":"1.2.3"}],"bad@mk":[{"scope":"user","installPath":"` + filepath.Join(dir, "bad") + `","version":"1"}]}}`
	writePluginFiles(t, dir, files)
	proj := t.TempDir()
	out, _, code := runPlugins(t, cfg, proj, "list")
	for _, want := range []string{"p@mk", "user", "bad@mk", "unreadable", "! bad@mk: not read as Claude Code reads it", "unconfined in Claude Code", "RUNS: where the plugin's MCP servers"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("plugins list: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	out, _, code = runPlugins(t, cfg, proj, "describe", "p@mk")
	for _, want := range []string{"srv: node ${CLAUDE_PLUGIN_ROOT}/s.js", "SessionStart: command: echo hi", "go: gopls", "watch: tail -f x", "skills: s1", "agents: a1", "commands: c1", "run: unconfined, in Claude Code's own process tree"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("plugins describe: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	if _, errOut, code := runPlugins(t, cfg, proj, "describe", "P@mk"); code == ExitOK || !strings.Contains(errOut, "installed: bad@mk, p@mk") {
		t.Errorf("describe of a name in other letters: exit %d, %s", code, errOut)
	}
}
