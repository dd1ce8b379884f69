//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The plugin measured: p, from the directory marketplace benchmk, whose
// one server srv is server.js with one tool, echo.
const (
	plugin      = "p"
	marketplace = "benchmk"
	// twinMarket is gemkit's directory marketplace, which holds the
	// twin plugin of the same name (docs/claude-code-plugins.md).
	twinMarket = "gemkit-sandbox"
	// recordEnv names the file the server writes its argv, folder and
	// environment to when it is set: the bench sets it only for the one
	// `claude mcp list` that records how Claude Code starts the server.
	recordEnv = "GEMKIT_BENCH_RECORD"
)

// serverJS is the plugin's server as plugins ship theirs: one node
// script, newline-delimited JSON-RPC on stdio, no dependency.
const serverJS = `const fs = require('fs');
if (process.env.` + recordEnv + `) fs.writeFileSync(process.env.` + recordEnv + `, JSON.stringify({argv: process.argv, cwd: process.cwd(), env: process.env}));
let buf = '';
process.stdin.on('data', d => {
  buf += d; let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    const send = r => process.stdout.write(JSON.stringify(Object.assign({jsonrpc: '2.0', id: m.id}, r)) + '\n');
    if (m.method === 'initialize') send({result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'srv', version: '1.0.0'}}});
    else if (m.method === 'tools/list') send({result: {tools: [{name: 'echo', description: 'Answers its text.', inputSchema: {type: 'object', properties: {text: {type: 'string'}}, required: ['text']}}]}});
    else if (m.method === 'tools/call') send({result: {content: [{type: 'text', text: String(m.params.arguments.text)}]}});
    else if (m.id !== undefined) send({error: {code: -32601, message: 'no such method'}});
  }
});
`

// home is a person's home of the bench's own: Claude Code's folder in
// it, the marketplace folder the plugin comes from, the project folder
// Claude Code runs in, and gemkit's binary.
type home struct {
	claude, gemkit, dir, cfg, mkt, proj string
	env                                 []string
}

func newHome(tmp, claude, gemkit string) *home {
	dir := filepath.Join(tmp, "home")
	h := &home{claude: claude, gemkit: gemkit, dir: dir, cfg: filepath.Join(dir, ".claude"), mkt: filepath.Join(tmp, "mkt"), proj: filepath.Join(dir, "work")}
	h.env = []string{
		"HOME=" + dir, "CLAUDE_CONFIG_DIR=" + h.cfg, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "NO_COLOR=1",
	}
	return h
}

// run runs Claude Code with args offline (in a network namespace with
// no interface up, as bench/plugins runs it), with extra environment.
func (h *home) run(extra []string, args ...string) (string, error) {
	argv := append([]string{"unshare", "--user", "--map-root-user", "--net", h.claude}, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = h.proj, append(slices.Clone(h.env), extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// installBare writes the marketplace, has Claude Code add it and
// install the plugin for the user, and has it start the server once
// (claude mcp list) with the server writing down how it was started:
// the bare side starts it so.
func (h *home) installBare() (side, error) {
	files := map[string]string{
		".claude-plugin/marketplace.json":      `{"name":"` + marketplace + `","owner":{"name":"gemkit bench"},"plugins":[{"name":"` + plugin + `","source":"./` + plugin + `"}]}`,
		plugin + "/.claude-plugin/plugin.json": `{"name":"` + plugin + `","version":"1.0.0","description":"One stdio MCP server, a node script."}`,
		plugin + "/.mcp.json":                  `{"mcpServers":{"srv":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/server.js"]}}}`,
		plugin + "/server.js":                  serverJS,
	}
	for name, data := range files {
		p := filepath.Join(h.mkt, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return side{}, err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return side{}, err
		}
	}
	if err := os.MkdirAll(h.proj, 0o755); err != nil {
		return side{}, err
	}
	for _, args := range [][]string{{"plugin", "marketplace", "add", h.mkt}, {"plugin", "install", plugin + "@" + marketplace}} {
		if _, err := h.run(nil, args...); err != nil {
			return side{}, err
		}
	}
	rec := filepath.Join(filepath.Dir(h.dir), "spawn.json")
	out, err := h.run([]string{recordEnv + "=" + rec}, "mcp", "list")
	if err != nil {
		return side{}, err
	}
	if !strings.Contains(out, "plugin:"+plugin+":srv") || !strings.Contains(out, "Connected") {
		return side{}, fmt.Errorf("claude mcp list did not connect to the plugin's server:\n%s", out)
	}
	var sp spawn
	b, err := os.ReadFile(rec)
	if err != nil {
		return side{}, fmt.Errorf("the server wrote no record of its start under claude mcp list: %w", err)
	}
	if err := json.Unmarshal(b, &sp); err != nil {
		return side{}, err
	}
	delete(sp.Env, recordEnv)
	fmt.Printf("Claude Code starts the plugin's server as: node %s, in %s, with %d variables (%s)\n",
		strings.Join(sp.Argv[1:], " "), sp.Cwd, len(sp.Env), strings.Join(claudeVars(sp.Env), " "))
	return side{name: "bare, as Claude Code starts it", tool: "echo", cmd: func() *exec.Cmd {
		// node by its name, found on PATH as Claude Code finds it.
		c := exec.Command("node", sp.Argv[1:]...)
		c.Dir, c.Env = sp.Cwd, sp.environ()
		return c
	}}, nil
}

// spawn is how Claude Code started the server, as the server saw it.
type spawn struct {
	Argv []string          `json:"argv"`
	Cwd  string            `json:"cwd"`
	Env  map[string]string `json:"env"`
}

func (sp spawn) environ() []string {
	var env []string
	for k, v := range sp.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// claudeVars are the variables Claude Code adds for a server, by name.
func claudeVars(env map[string]string) []string {
	var names []string
	for k := range env {
		if strings.Contains(k, "CLAUDE") || k == "AI_AGENT" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// switchTwin switches the plugin with gemkit plugins sandbox, checks
// with Claude Code that its twin's server connects in place of the
// plugin's own, and returns the side that starts the twin's server as
// Claude Code does: the command of the twin plugin's .mcp.json, with
// the bare side's environment but for the twin's own
// CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA (Claude Code gives each
// plugin's servers their own).
func (h *home) switchTwin(bare side) (side, error) {
	sw := exec.Command(h.gemkit, "plugins", "sandbox", plugin+"@"+marketplace)
	sw.Dir, sw.Env, sw.Stdin = h.proj, h.env, strings.NewReader("")
	if out, err := sw.CombinedOutput(); err != nil {
		return side{}, fmt.Errorf("gemkit plugins sandbox: %v\n%s", err, out)
	}
	out, err := h.run(nil, "mcp", "list")
	if err != nil {
		return side{}, err
	}
	if !strings.Contains(out, "plugin:"+plugin+":sandbox") || strings.Contains(out, "plugin:"+plugin+":srv") || !strings.Contains(out, "Connected") {
		return side{}, fmt.Errorf("switched, claude mcp list does not show the twin's server alone, connected:\n%s", out)
	}
	root, sv, err := h.twinServer()
	if err != nil {
		return side{}, err
	}
	probe := bare.cmd()
	env := slices.Clone(probe.Env)
	for i, kv := range env {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case "CLAUDE_PLUGIN_ROOT":
			env[i] = k + "=" + root
		case "CLAUDE_PLUGIN_DATA":
			env[i] = k + "=" + strings.TrimSuffix(v, plugin+"-"+marketplace) + plugin + "-" + twinMarket
		}
	}
	fmt.Printf("Switched: Claude Code starts the twin's server as: %s\n", strings.Join(sv, " "))
	tool := strings.Join([]string{plugin, marketplace}, "-") + "_echo"
	return side{name: "switched, through gemkit mcp --only", tool: tool, cmd: func() *exec.Cmd {
		c := exec.Command(sv[0], sv[1:]...)
		c.Dir, c.Env = probe.Dir, env
		return c
	}}, nil
}

// twinServer finds the twin plugin where Claude Code loads it from, in
// place: the folder its entry names in gemkit's directory marketplace,
// which the user settings name (extraKnownMarketplaces); and the
// command line of its one server, which must hold no variable (the
// bench does not expand them).
func (h *home) twinServer() (root string, argv []string, err error) {
	var settings struct {
		Markets map[string]struct {
			Source struct{ Path string } `json:"source"`
		} `json:"extraKnownMarketplaces"`
	}
	var market struct {
		Plugins []struct{ Name, Source string } `json:"plugins"`
	}
	var mcp struct {
		Servers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := readJSON(filepath.Join(h.cfg, "settings.json"), &settings); err != nil {
		return "", nil, err
	}
	tm := settings.Markets[twinMarket].Source.Path
	if err := readJSON(filepath.Join(tm, ".claude-plugin", "marketplace.json"), &market); err != nil {
		return "", nil, err
	}
	for _, p := range market.Plugins {
		if p.Name == plugin {
			root = filepath.Join(tm, filepath.FromSlash(p.Source))
		}
	}
	if err := readJSON(filepath.Join(root, ".mcp.json"), &mcp); err != nil {
		return "", nil, err
	}
	if len(mcp.Servers) != 1 {
		return "", nil, fmt.Errorf("the twin plugin's servers: %+v, want one", mcp.Servers)
	}
	for _, sv := range mcp.Servers {
		argv = append([]string{sv.Command}, sv.Args...)
	}
	for _, a := range argv {
		if a == "" || strings.Contains(a, "${") {
			return "", nil, fmt.Errorf("the twin's command line %q holds a variable or an empty word, which the bench does not expand", argv)
		}
	}
	return root, argv, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
