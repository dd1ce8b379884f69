package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// nodeLSP is an LSP server in Node: it answers initialize (hover), and a
// hover with what it saw: its PID namespace and its plugin folder.
const nodeLSP = `const fs = require('fs');
let buf = Buffer.alloc(0);
const send = (m) => { const b = Buffer.from(JSON.stringify(Object.assign({jsonrpc: '2.0'}, m))); process.stdout.write('Content-Length: ' + b.length + '\r\n\r\n'); process.stdout.write(b); };
const ns = fs.readlinkSync('/proc/self/ns/pid');
const root = fs.existsSync(process.env.CLAUDE_PLUGIN_ROOT + '/lsp.js') ? 'ok' : 'no';
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const i = buf.indexOf('\r\n\r\n');
    if (i < 0) return;
    const n = Number(/Content-Length: *(\d+)/i.exec(buf.slice(0, i).toString())[1]);
    if (buf.length < i + 4 + n) return;
    const m = JSON.parse(buf.slice(i + 4, i + 4 + n).toString());
    buf = buf.slice(i + 4 + n);
    if (m.method === 'exit') process.exit(0);
    if (m.id === undefined) continue;
    if (m.method === 'initialize') send({id: m.id, result: {capabilities: {hoverProvider: true, textDocumentSync: 1}, serverInfo: {name: 'tiny'}}});
    else if (m.method === 'textDocument/hover') send({id: m.id, result: {contents: {kind: 'plaintext', value: 'hover from tiny ns=' + ns + ' root=' + root}}});
    else send({id: m.id, result: null});
  }
});
`

// twinInClaude makes, in a test folder, a switched twin extension with
// an LSP server (nodeLSP) and a monitor, and a Claude Code home where the
// twin plugin, from gemkit's directory marketplace, runs them through
// gemkit plugins part; the model plays script(ws), ws being the
// workspace. It returns how to run Claude Code there, its environment
// and the model.
func twinInClaude(t *testing.T, unprivileged bool, script func(ws string) func(*claudetest.Request) claudetest.Reply) (*claudeRun, []string, *claudetest.Model) {
	claude := claudetest.Binary(t)
	bin := gemkittest.Gemkit(t)
	root := t.TempDir()
	th, src, mkt, ws := filepath.Join(root, "th"), filepath.Join(root, "src", "twin"), filepath.Join(root, "mkt"), filepath.Join(root, "ws")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json":  `{"name": "twin", "version": "1.0.0"}`,
		"hooks/hooks.json":       `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
		".lsp.json":              `{"tiny": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/lsp.js"], "extensionToLanguage": {".x": "x"}}}`,
		"lsp.js":                 nodeLSP,
		"monitors/monitors.json": `[{"name": "tick", "command": "echo tick-from-sandbox $(readlink /proc/self/ns/pid); sleep 600", "description": "ticks"}]`,
	})
	runner, _ := json.Marshal(map[string]any{"tiny": map[string]any{"command": "BIN", "args": []string{"plugins", "part", "--home", th, "twin", "lsp", "tiny"},
		"extensionToLanguage": map[string]string{".x": "x"}}})
	writeFiles(t, mkt, map[string]string{
		".claude-plugin/marketplace.json": `{"name": "gemkit-sandbox", "owner": {"name": "gemkit"}, "plugins": [{"name": "twin", "source": "./twin"}]}`,
		"twin/.claude-plugin/plugin.json": `{"name": "twin", "version": "1.0.0"}`,
		"twin/.lsp.json":                  string(runner),
		"twin/monitors/monitors.json":     `[{"name": "tick", "command": "BIN plugins part --home ` + th + ` twin monitor tick", "description": "ticks"}]`,
	})
	writeFiles(t, ws, map[string]string{"a.x": "hello\n"})
	for _, d := range []string{filepath.Join(root, "tmp"), filepath.Join(root, "claude"), th} {
		must(t, os.MkdirAll(d, 0o755))
	}
	r := &claudeRun{claude: claude, root: root, ws: ws, env: []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + filepath.Join(root, "tmp"), "LANG=C.UTF-8"}}
	if unprivileged {
		bin, r.user = asNobody(t, root, bin)
	}
	for _, f := range []string{".lsp.json", "monitors/monitors.json"} {
		p := filepath.Join(mkt, "twin", f)
		b, _ := os.ReadFile(p)
		must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "BIN", bin, 1)), 0o644))
	}
	r.gemkit(t, bin, "extensions", "--home", th, "link", "--consent", src)
	r.gemkit(t, bin, "extensions", "--home", th, "sandbox", "twin")

	home := filepath.Join(root, "claude", "home")
	model := claudetest.StartModel(t, script(ws))
	env := append(claudetest.Home(t, home, model, gemkittest.ClosedPort(t), ws), "ENABLE_LSP_TOOL=1")
	r.chown(t, home)
	for _, args := range [][]string{{"plugin", "marketplace", "add", mkt}, {"plugin", "install", "twin@gemkit-sandbox"}} {
		if out, err := r.command(t.Context(), env, claude, args...).CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return r, env, model
}

// TestPluginPartMonitorRealClaude: in an interactive session of the
// real Claude Code 2.1.330, the twin plugin's monitor, run by gemkit
// plugins part, is armed at the session's start, and its line reaches
// the model from another PID namespace than gemkit's. As root and as
// uid 65534.
func TestPluginPartMonitorRealClaude(t *testing.T) {
	gemkittest.AsRootAndUnprivileged(t, pluginPartMonitorRealClaude)
}

func pluginPartMonitorRealClaude(t *testing.T, unprivileged bool) {
	r, env, model := twinInClaude(t, unprivileged, func(string) func(*claudetest.Request) claudetest.Reply {
		return func(*claudetest.Request) claudetest.Reply { return claudetest.Reply{Text: "Noted."} }
	})
	argv := append(append(append(slices.Clone(r.user), "env", "-i"), append(r.env, env...)...), r.claude)
	cc := gemkittest.StartTmux(t, t.TempDir(), r.ws, nil, 200, 50, argv...).Main()
	gemkittest.WaitScreen(t, cc.Screen, "the monitor's line", func(s string) bool { return strings.Contains(s, "Monitor event: tick-from-sandbox") })
	// Claude Code gives it to the model, in a turn of its own.
	got := gemkittest.WaitScreen(t, func() string {
		raw, _ := json.Marshal(model.Requests())
		return string(raw)
	}, "the monitor's line at the model", func(s string) bool { return strings.Contains(s, "tick-from-sandbox") })
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if i := strings.Index(got, "tick-from-sandbox "); strings.HasPrefix(got[i:], "tick-from-sandbox "+ns) {
		t.Errorf("the monitor ran in gemkit's PID namespace: %.200s", got[i:])
	}
}

// TestPluginPartRealClaude: the real Claude Code 2.1.330 loads, from a
// directory marketplace, a plugin whose .lsp.json runs gemkit plugins
// part for a switched twin extension's LSP server, and its LSP tool's
// hover is answered by that server, from another PID namespace than
// gemkit's, with the twin's folder as CLAUDE_PLUGIN_ROOT. As root and
// as uid 65534.
func TestPluginPartRealClaude(t *testing.T) {
	gemkittest.AsRootAndUnprivileged(t, pluginPartRealClaude)
}

func pluginPartRealClaude(t *testing.T, unprivileged bool) {
	r, env, model := twinInClaude(t, unprivileged, func(ws string) func(*claudetest.Request) claudetest.Reply {
		return func(q *claudetest.Request) claudetest.Reply {
			if raw, _ := json.Marshal(q.Messages); strings.Contains(string(raw), `tool_result`) {
				return claudetest.Reply{Text: "Done."}
			}
			return claudetest.Reply{Tool: "LSP", Input: map[string]any{"operation": "hover", "filePath": filepath.Join(ws, "a.x"), "line": 1, "character": 1}}
		}
	})
	out, err := r.command(t.Context(), env, r.claude, "-p", "--allowedTools", "LSP", "--", "hover a.x").CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	reqs := model.Requests()
	raw, _ := json.Marshal(reqs[len(reqs)-1].Messages)
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if !strings.Contains(string(raw), "hover from tiny ns=pid:") || strings.Contains(string(raw), "ns="+ns) || !strings.Contains(string(raw), "root=ok") {
		t.Errorf("the LSP tool's result (gemkit's PID namespace is %s): %s\nclaude said:\n%s", ns, raw, out)
	}
}
