//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/claudeplugin"
)

// marketplace is the directory marketplace's name.
const marketplace = "benchmk"

// home is a Claude Code home of the bench's own, the marketplace folder
// its plugins come from, and the project folder the commands run in.
type home struct {
	bin, dir, mkt, proj string
	env                 []string
}

func newHome(tmp, claude string) *home {
	dir := filepath.Join(tmp, "home")
	return &home{bin: claude, dir: dir, mkt: filepath.Join(tmp, "mkt"), proj: filepath.Join(dir, "work"),
		env: []string{
			"HOME=" + dir, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir, ".claude"), "PATH=" + os.Getenv("PATH"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1", "NO_COLOR=1",
		}}
}

// claude is the command line that runs Claude Code with args offline: in
// a new network namespace with no interface up (unshare), as the bench
// of the extensions runs Gemini CLI.
func (h *home) claude(args ...string) []string {
	return append([]string{"unshare", "--user", "--map-root-user", "--net", h.bin}, args...)
}

func (h *home) run(args ...string) error {
	argv := h.claude(args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = h.proj, h.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// install writes a marketplace of n plugins and has Claude Code add it
// and install each for the user, as a person does, then disable every
// third.
func (h *home) install(n int) error {
	if err := os.MkdirAll(h.proj, 0o755); err != nil {
		return err
	}
	var entries []map[string]string
	for i := range n {
		name := pluginName(i)
		for file, data := range pluginFiles(name) {
			p := filepath.Join(h.mkt, name, filepath.FromSlash(file))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				return err
			}
		}
		entries = append(entries, map[string]string{"name": name, "source": "./" + name})
	}
	m, _ := json.Marshal(map[string]any{"name": marketplace, "owner": map[string]string{"name": "gemkit bench"}, "plugins": entries})
	if err := os.MkdirAll(filepath.Join(h.mkt, ".claude-plugin"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.mkt, ".claude-plugin", "marketplace.json"), m, 0o644); err != nil {
		return err
	}
	if err := h.run("plugin", "marketplace", "add", h.mkt); err != nil {
		return err
	}
	for i := range n {
		if err := h.run("plugin", "install", pluginName(i)+"@"+marketplace); err != nil {
			return err
		}
	}
	for i := 0; i < n; i += 3 {
		if err := h.run("plugin", "disable", pluginName(i)+"@"+marketplace); err != nil {
			return err
		}
	}
	return nil
}

func pluginName(i int) string { return fmt.Sprintf("bench-plugin-%03d", i) }

// pluginFiles is a plugin with one part of each kind.
func pluginFiles(name string) map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json": `{"name":"` + name + `","version":"1.2.3","description":"A generated plugin with one part of each kind."}`,
		".mcp.json":                  `{"mcpServers":{"srv":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/server.js"]}}}`,
		"hooks/hooks.json":           `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo started"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"${CLAUDE_PLUGIN_ROOT}/check.sh"}]}]}}`,
		".lsp.json":                  `{"go":{"command":"gopls","extensionToLanguage":{".go":"go"}}}`,
		"monitors/monitors.json":     `[{"name":"watch","command":"tail -f log"}]`,
		"skills/s1/SKILL.md":         "---\nname: s1\ndescription: a skill\n---\nbody\n",
		"agents/a1.md":               "---\nname: a1\ndescription: an agent\n---\nbody\n",
		"commands/c1.md":             "---\ndescription: a command\n---\nbody\n",
	}
}

// sameList checks that gemkit and Claude Code list the same plugins,
// enabled alike, with the same MCP servers: the two commands timed do
// the same reading.
func (h *home) sameList(gemkit string) error {
	cmd := exec.Command(gemkit, "plugins", "list", "--json")
	cmd.Dir, cmd.Env = h.proj, h.env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("gemkit plugins list --json: %w", err)
	}
	var g claudeplugin.Home
	if err := json.Unmarshal(out, &g); err != nil {
		return fmt.Errorf("gemkit plugins list --json: %w", err)
	}
	gemkitSays := map[string]string{}
	for _, p := range g.Plugins {
		_, on := p.EnabledNow()
		var servers []string
		for _, s := range p.Servers {
			servers = append(servers, s.Name)
		}
		gemkitSays[p.ID] = fmt.Sprintf("enabled %v, servers %v, unreadable %q", on, servers, p.Unreadable)
	}
	argv := h.claude("plugin", "list", "--json")
	cmd = exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = h.proj, h.env
	if out, err = cmd.Output(); err != nil {
		return fmt.Errorf("claude plugin list --json: %w", err)
	}
	var c []struct {
		ID         string                     `json:"id"`
		Enabled    bool                       `json:"enabled"`
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		return fmt.Errorf("claude plugin list --json: %w", err)
	}
	claudeSays := map[string]string{}
	for _, p := range c {
		servers := slices.Sorted(maps.Keys(p.MCPServers))
		claudeSays[p.ID] = fmt.Sprintf("enabled %v, servers %v, unreadable %q", p.Enabled, servers, "")
	}
	if !maps.Equal(gemkitSays, claudeSays) {
		return fmt.Errorf("gemkit and Claude Code list the plugins apart:\ngemkit: %v\nClaude Code: %v", gemkitSays, claudeSays)
	}
	fmt.Printf("gemkit and Claude Code list the same %d plugins, enabled alike, with the same servers\n", len(c))
	return nil
}
