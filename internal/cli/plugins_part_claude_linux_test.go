package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	claude := claudetest.Binary(t)
	bin := gemkittest.Gemkit(t)
	root := t.TempDir()
	th, src, mkt, ws := filepath.Join(root, "th"), filepath.Join(root, "src", "twin"), filepath.Join(root, "mkt"), filepath.Join(root, "ws")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "twin", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
		".lsp.json":             `{"tiny": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/lsp.js"], "extensionToLanguage": {".x": "x"}}}`,
		"lsp.js":                nodeLSP,
	})
	runner, _ := json.Marshal(map[string]any{"tiny": map[string]any{"command": "BIN", "args": []string{"plugins", "part", "--home", th, "twin", "lsp", "tiny"},
		"extensionToLanguage": map[string]string{".x": "x"}}})
	writeFiles(t, mkt, map[string]string{
		".claude-plugin/marketplace.json": `{"name": "gemkit-sandbox", "owner": {"name": "gemkit"}, "plugins": [{"name": "twin", "source": "./twin"}]}`,
		"twin/.claude-plugin/plugin.json": `{"name": "twin", "version": "1.0.0"}`,
		"twin/.lsp.json":                  string(runner),
	})
	writeFiles(t, ws, map[string]string{"a.x": "hello\n"})
	for _, d := range []string{filepath.Join(root, "tmp"), filepath.Join(root, "claude"), th} {
		must(t, os.MkdirAll(d, 0o755))
	}
	r := &claudeRun{claude: claude, root: root, ws: ws, env: []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + filepath.Join(root, "tmp"), "LANG=C.UTF-8"}}
	if unprivileged {
		bin, r.user = asNobody(t, root, bin)
	}
	lsp := filepath.Join(mkt, "twin", ".lsp.json")
	b, _ := os.ReadFile(lsp)
	must(t, os.WriteFile(lsp, []byte(strings.Replace(string(b), "BIN", bin, 1)), 0o644))
	r.gemkit(t, bin, "extensions", "--home", th, "link", "--consent", src)
	r.gemkit(t, bin, "extensions", "--home", th, "sandbox", "twin")

	home := filepath.Join(root, "claude", "home")
	model := claudetest.StartModel(t, func(q *claudetest.Request) claudetest.Reply {
		if raw, _ := json.Marshal(q.Messages); strings.Contains(string(raw), `tool_result`) {
			return claudetest.Reply{Text: "Done."}
		}
		return claudetest.Reply{Tool: "LSP", Input: map[string]any{"operation": "hover", "filePath": filepath.Join(ws, "a.x"), "line": 1, "character": 1}}
	})
	env := append(claudetest.Home(t, home, model, gemkittest.ClosedPort(t), ws), "ENABLE_LSP_TOOL=1")
	r.chown(t, home)
	for _, args := range [][]string{{"plugin", "marketplace", "add", mkt}, {"plugin", "install", "twin@gemkit-sandbox"}} {
		if out, err := r.command(t.Context(), env, claude, args...).CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := r.command(t.Context(), env, claude, "-p", "--allowedTools", "LSP", "--", "hover a.x").CombinedOutput()
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
