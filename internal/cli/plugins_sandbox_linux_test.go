package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudeswitch"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// nsServer is a stdio MCP server, one node script, whose one tool ns
// answers its PID namespace (/proc/self/ns/pid) and whether it could
// connect to the loopback port of its first argument: the tool tells
// where the server runs.
const nsServer = `const fs = require('fs'); let buf = '';
process.stdin.on('data', d => { buf += d; let i;
  while ((i = buf.indexOf('\n')) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1); if (!line.trim()) continue;
    const m = JSON.parse(line); const send = r => process.stdout.write(JSON.stringify(Object.assign({jsonrpc: '2.0', id: m.id}, r)) + '\n');
    if (m.method === 'initialize') send({result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'ns', version: '1'}}});
    else if (m.method === 'tools/list') send({result: {tools: [{name: 'ns', description: 'the PID namespace of the server', inputSchema: {type: 'object', properties: {}}}]}});
    else if (m.method === 'tools/call') {
      const ns = 'ns=' + fs.readlinkSync('/proc/self/ns/pid');
      const c = require('net').connect(Number(process.argv[2]), '127.0.0.1');
      c.on('connect', () => { c.destroy(); send({result: {content: [{type: 'text', text: ns + ' net=connected'}]}}); });
      c.on('error', e => send({result: {content: [{type: 'text', text: ns + ' net=' + e.code}]}}));
    }
    else if (m.id !== undefined) send({error: {code: -32601, message: 'no such method'}});
  } });
`

// claudeHome is a person's home with the real Claude Code 2.1.330 and
// gemkit; user, when set, runs every process as another user (setpriv).
type claudeHome struct {
	t                        *testing.T
	root, home, cfg, mkt, ws string
	bin, claude              string
	env                      []string
	user                     []string
}

// switchPlugin runs a plugin with every part through gemkit plugins
// sandbox and the real Claude Code: see TestPluginsSandboxRealClaude.
func newClaudeHome(t *testing.T, unprivileged bool, model *claudetest.Model) *claudeHome {
	root := t.TempDir()
	h := &claudeHome{t: t, root: root, home: filepath.Join(root, "home"), mkt: filepath.Join(root, "mkt"), ws: filepath.Join(root, "work"), claude: claudetest.Binary(t)}
	h.cfg = filepath.Join(h.home, ".claude")
	must(t, os.MkdirAll(h.ws, 0o755))
	b, err := os.ReadFile(gemkittest.Gemkit(t))
	must(t, err)
	h.bin = filepath.Join(root, "bin", "gemkit")
	must(t, os.MkdirAll(filepath.Dir(h.bin), 0o755))
	must(t, os.WriteFile(h.bin, b, 0o755))
	h.env = append(claudetest.Home(t, h.home, model, gemkittest.ClosedPort(t), h.ws), "ENABLE_TOOL_SEARCH=false", "PATH="+os.Getenv("PATH"))
	files := map[string]string{".claude-plugin/marketplace.json": `{"name":"localmk","owner":{"name":"t"},"plugins":[{"name":"p","source":"./p"}]}`}
	for k, v := range pluginFiles("p") {
		files[k] = v
	}
	files["p/s.js"] = nsServer
	// A second server as published plugins start theirs, fetched by
	// npx from the registry at each start: the switch pins it.
	reg := npmregistrytest.New(t, nil)
	publishHello(reg, "1.0.0", "1.0.0")
	port := strings.TrimPrefix(model.URL, "http://127.0.0.1:")
	files["p/.mcp.json"] = `{"mcpServers":{"srv":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/s.js","` + port + `"]},"hello":{"command":"npx","args":["-y","hello-mcp","--stdio"]}}}`
	must(t, os.MkdirAll(h.home, 0o755))
	must(t, os.WriteFile(filepath.Join(h.home, ".npmrc"), []byte("registry="+reg.URL+"\nfetch-retries=0\n"), 0o600))
	// The hook leaves a mark where it could write unconfined, and tells
	// the model its PID namespace (additionalContext).
	files["p/hooks/hooks.json"] = `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"` + sessionHook(filepath.Join(root, "hook-ran")) + `"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true","timeout":5}]}]}}`
	writePluginFiles(t, h.mkt, files)
	if unprivileged {
		h.user = []string{gemkittest.Tool(t, "setpriv", "util-linux"), "--reuid=65534", "--regid=65534", "--clear-groups"}
		must(t, os.Chmod(filepath.Dir(root), 0o755))
		must(t, os.Chmod(root, 0o755))
		must(t, filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 65534, 65534)
		}))
	}
	for _, args := range [][]string{{"plugin", "marketplace", "add", h.mkt}, {"plugin", "install", "p@localmk"}} {
		if out, err := h.command(context.Background(), append([]string{h.claude}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return h
}

func (h *claudeHome) command(ctx context.Context, argv ...string) *exec.Cmd {
	argv = append(append([]string(nil), h.user...), argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = h.ws, h.env, strings.NewReader("")
	return cmd
}

// kit runs gemkit with args, failing the test when it fails.
func (h *claudeHome) kit(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := h.command(ctx, append([]string{h.bin}, args...)...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("gemkit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// session runs one headless Claude Code session, returning its init
// message (what it loaded) and its whole output.
func (h *claudeHome) session(prompt string) (initMsg, string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := h.command(ctx, h.claude, "-p", prompt, "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__plugin_p_sandbox,mcp__plugin_p_srv").CombinedOutput()
	if err != nil {
		h.t.Fatalf("claude -p: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var m initMsg
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Subtype == "init" {
			return m, string(out)
		}
	}
	h.t.Fatalf("no init message from claude -p:\n%s", out)
	return initMsg{}, ""
}

// initMsg is what Claude Code's init system message says it loaded.
type initMsg struct {
	Subtype string   `json:"subtype"`
	Tools   []string `json:"tools"`
	Servers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Commands []string `json:"slash_commands"`
	Skills   []string `json:"skills"`
	Agents   []string `json:"agents"`
}

func (m initMsg) server(name string) string {
	for _, s := range m.Servers {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// TestPluginsSandboxRealClaude installs a plugin with a node MCP server,
// one npx -y package from a registry on loopback (pinned by the switch),
// a SessionStart and a PreToolUse hook, a skill, an agent, a command, an
// LSP server and a monitor from a directory marketplace into the real
// Claude Code 2.1.330, switches it with gemkit plugins sandbox, and runs
// a Claude Code session against the scripted model: the plugin's server
// is not started, the twin's gemkit mcp is, and the tool answers from
// another PID namespace than the host's, unable to reach a loopback
// port of the host; the original SessionStart hook
// did not run unconfined but in another PID namespace (its context
// reached the model); every skill, command and agent is listed under the
// plugin's name. --off gives Claude Code's user settings back byte for
// byte, and the next session runs the plugin's own server again. As
// root and as uid 65534.
func TestPluginsSandboxRealClaude(t *testing.T) {
	gemkittest.SkipShort(t, "the real Claude Code")
	gemkittest.Interop(t) // node, for the server
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	must(t, err)
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		const tool = "mcp__plugin_p_sandbox__p-localmk_ns"
		model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
			switch {
			case strings.Contains(r.Raw, `"tool_result"`):
				// The tool answered (or was refused): one call a session.
				return claudetest.Reply{Text: "The namespace was read."}
			case r.HasTool(tool):
				return claudetest.Reply{Tool: tool, Input: map[string]any{}}
			}
			return claudetest.Reply{Text: "no tool " + tool}
		})
		h := newClaudeHome(t, unprivileged, model)
		before, err := os.ReadFile(filepath.Join(h.cfg, "settings.json"))
		must(t, err)
		out := h.kit("plugins", "sandbox", "p@localmk")
		if strings.Contains(out, "Gemini CLI") {
			t.Errorf("the terms of a plugin's switch name Gemini CLI:\n%s", out)
		}
		for _, want := range []string{"Switching the Claude Code plugin p@localmk", "Hooks it runs, on Claude Code's events:", claudeswitch.ClaudeFetches,
			"Switched p@localmk to gemkit's sandbox", "plugin:p:srv, plugin:p:hello", "hello-mcp 1.0.0 installed", "listed now: hello (1 tool), srv (1 tool)"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in:\n%s", want, out)
			}
		}
		if out := h.kit("plugins", "doctor"); !strings.Contains(out, "ok: p@localmk runs in gemkit's sandbox") {
			t.Errorf("plugins doctor after the switch:\n%s", out)
		}
		if out := h.kit("plugins", "list"); !strings.Contains(out, "in gemkit's sandbox") || strings.Contains(out, "p@gemkit-sandbox") {
			t.Errorf("plugins list after the switch:\n%s", out)
		}
		m, all := h.session("What is the server's PID namespace?")
		if m.server("plugin:p:sandbox") != "connected" || m.server("plugin:p:srv") != "" {
			t.Errorf("servers %+v: want the twin's connected and the plugin's own absent\n%s", m.Servers, all)
		}
		checkListed(t, m)
		if !slices.Contains(m.Tools, "mcp__plugin_p_sandbox__p-localmk_remember") || m.server("plugin:p:hello") != "" {
			t.Errorf("the pinned npx server's tool is not served through the twin: %v, %+v", m.Tools, m.Servers)
		}
		answer := toolAnswer(model)
		t.Logf("the tool answered %s", answer)
		if !strings.HasPrefix(answer, "ns=pid:[") || strings.Contains(answer, hostNS) || strings.Contains(answer, "net=connected") || !strings.Contains(answer, "net=") {
			t.Errorf("the tool answered %q; the host's PID namespace is %s\n%s", answer, hostNS, all)
		}
		if _, err := os.Stat(filepath.Join(h.root, "hook-ran")); err == nil {
			t.Error("the plugin's SessionStart hook ran unconfined")
		}
		ns := hookNS(model)
		t.Logf("the SessionStart hook ran in %s", ns)
		if !strings.HasPrefix(ns, "pid:[") || ns == hostNS {
			t.Errorf("the SessionStart hook's context told the model the PID namespace %q; want one other than the host's %s", ns, hostNS)
		}
		checkHeld(t, h, tool)
		out = h.kit("plugins", "sandbox", "p@localmk", "--off")
		after, err := os.ReadFile(filepath.Join(h.cfg, "settings.json"))
		must(t, err)
		if string(after) != string(before) || !strings.Contains(out, "byte for byte") {
			t.Errorf("after --off (%s):\n%s\nwant byte for byte:\n%s", out, after, before)
		}
		m, all = h.session("What is the server's PID namespace?")
		if m.server("plugin:p:srv") != "connected" || m.server("plugin:p:sandbox") != "" {
			t.Errorf("after --off, servers %+v: want the plugin's own\n%s", m.Servers, all)
		}
		checkListed(t, m)
	})
}

// checkHeld changes the switched plugin in its directory marketplace,
// as an update would: list says it is held and what changed, the next
// session gets none of its servers' tools, and agreeing again serves
// them again.
func checkHeld(t *testing.T, h *claudeHome, tool string) {
	t.Helper()
	s := filepath.Join(h.mkt, "p", "s.js")
	b, err := os.ReadFile(s)
	must(t, err)
	must(t, os.WriteFile(s, append(b, "// updated\n"...), 0o644))
	if out := h.kit("plugins", "list"); !strings.Contains(out, "held: the plugin changed since you agreed (changed s.js)") {
		t.Errorf("plugins list after the update:\n%s", out)
	}
	if m, all := h.session("What is the server's PID namespace?"); slices.Contains(m.Tools, tool) {
		t.Errorf("the held twin's tool is served: %v\n%s", m.Tools, all)
	}
	h.kit("plugins", "sandbox", "p@localmk")
	if m, all := h.session("What is the server's PID namespace?"); !slices.Contains(m.Tools, tool) {
		t.Errorf("agreed again, the twin's tool is not served: %v\n%s", m.Tools, all)
	}
}

// checkListed checks that Claude Code lists the plugin's skill, command
// and agent under its name.
func checkListed(t *testing.T, m initMsg) {
	t.Helper()
	for _, c := range []struct {
		what string
		list []string
		name string
	}{{"slash commands", m.Commands, "p:c1"}, {"slash commands", m.Commands, "p:s1"}, {"skills", m.Skills, "p:s1"}, {"agents", m.Agents, "p:a1"}} {
		if !slices.Contains(c.list, c.name) {
			t.Errorf("no %s in the %s Claude Code lists: %v", c.name, c.what, c.list)
		}
	}
}

// toolAnswer is the tool result the model was given, "" when none.
func toolAnswer(model *claudetest.Model) string {
	for _, r := range model.Requests() {
		if u := r.LastUser(); strings.Contains(u, "ns=pid:") {
			i := strings.Index(u, "ns=pid:")
			if end := strings.Index(u[i:], " net="); end > 0 {
				w := strings.IndexAny(u[i+end+5:], "\"\n ")
				if w < 0 {
					w = len(u) - (i + end + 5)
				}
				return u[i : i+end+5+w]
			}
		}
	}
	return ""
}

// sessionHook is a SessionStart hook's command (as a JSON string's
// content) that writes mark, where only an unconfined hook can, and
// answers its PID namespace as context for the model: "hookns=pid:[…]".
func sessionHook(mark string) string {
	return `echo ran > ` + mark + ` 2>/dev/null; printf '{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"hookns=%s\"}}' \"$(readlink /proc/self/ns/pid)\"`
}

// hookNS is the PID namespace the SessionStart hook's context gave the
// model, "" when none reached it.
func hookNS(model *claudetest.Model) string {
	for _, r := range model.Requests() {
		if i := strings.Index(r.Raw, "hookns="); i >= 0 {
			rest := r.Raw[i+len("hookns="):]
			if end := strings.IndexAny(rest, "\\\" \n"); end >= 0 {
				rest = rest[:end]
			}
			return rest
		}
	}
	return ""
}
