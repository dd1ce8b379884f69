package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// tinyLSP is an LSP server in bash: it answers one initialize request,
// its server name saying what it saw: its PID namespace, whether it
// reached a loopback port of the host ($1), its plugin folder and data
// folder.
const tinyLSP = `len=0
while IFS= read -r line; do
  line=${line%$'\r'}
  [ -z "$line" ] && break
  case "$line" in Content-Length:*) len=${line#Content-Length: };; esac
done
body=$(head -c "$len")
id=$(printf '%s' "$body" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
ns=$(readlink /proc/self/ns/pid)
net=refused
(exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && net=reached
root=no; [ -f "$CLAUDE_PLUGIN_ROOT/lsp.sh" ] && root=ok
data=no; touch "$DATA/seen" 2>/dev/null && data=ok
resp='{"jsonrpc":"2.0","id":'$id',"result":{"capabilities":{"hoverProvider":true},"serverInfo":{"name":"ns='$ns' net='$net' root='$root' data='$data'"}}}'
printf 'Content-Length: %d\r\n\r\n%s' "${#resp}" "$resp"
`

// twinPlugin writes and switches, in e's home, a twin extension made
// of a Claude Code plugin with an LSP server and a monitor (and a hook,
// which makes it one the switch takes), and returns its folder.
func twinPlugin(t *testing.T, e *env) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "twin")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json":      `{"name": "twin", "version": "1.0.0"}`,
		"hooks/hooks.json":           `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
		".claude-plugin/plugin.json": `{"name": "twin"}`,
		".lsp.json": `{"tiny": {"command": "bash", "args": ["${CLAUDE_PLUGIN_ROOT}/lsp.sh", "${PORT}"], "extensionToLanguage": {".x": "x"}},
 "loose": {"command": "bash", "args": ["-c", "echo ${HOME}"], "extensionToLanguage": {".y": "y"}}}`,
		"lsp.sh":                 tinyLSP,
		"monitors/monitors.json": `[{"name": "tick", "command": "echo first; echo from ${CLAUDE_PLUGIN_ROOT}; echo in ${CLAUDE_PROJECT_DIR}", "description": "ticks"}]`,
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "twin")
	return src
}

// runPart runs gemkit plugins part for e's home with args and stdin, in
// e's workspace (the caller's working folder: t.Chdir).
func runPart(e *env, stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	a := newApp(Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	a.lookupEnv = func(k string) (string, bool) {
		if k == "HOME" {
			return e.home, true
		}
		return os.LookupEnv(k)
	}
	code = run(context.Background(), append([]string{"plugins", "part", "--home", e.home}, args...), a)
	return out.String(), errb.String(), code
}

// TestPluginPart: a switched plugin's LSP server, run by gemkit plugins
// part, answers initialize over the command's stdio from another PID
// namespace, with no network (a loopback port of the host is not
// reached), its plugin folder as CLAUDE_PLUGIN_ROOT and its data
// folder writable; a monitor's lines pass, its variables replaced. A
// part naming another variable, or one not there, runs nothing, in
// words; so does any part once the extension changed after consent.
func TestPluginPart(t *testing.T) {
	e := newEnv(t)
	t.Chdir(e.ws)
	src := twinPlugin(t, e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// The port reaches the server as its argument: the test rewrites
	// ${PORT}, a variable gemkit refuses, before consent.
	lsp := filepath.Join(src, ".lsp.json")
	b, _ := os.ReadFile(lsp)
	must(t, os.WriteFile(lsp, bytes.Replace(b, []byte("${PORT}"), []byte(port), 1), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "lsp.sh"), []byte(strings.Replace(tinyLSP, "$DATA", "$CLAUDE_PLUGIN_DATA", 1)), 0o644))
	e.mustRun("consent", "twin", "--grant")

	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`
	out, errOut, code := runPart(e, fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(req), req), "twin", "lsp", "tiny")
	_, body, _ := strings.Cut(out, "\r\n\r\n")
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if code != ExitOK || json.Unmarshal([]byte(body), &resp) != nil || resp.ID != 1 {
		t.Fatalf("the LSP server: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	ns, _ := os.Readlink("/proc/self/ns/pid")
	said := resp.Result.ServerInfo.Name
	if strings.Contains(said, "ns="+ns) || !strings.Contains(said, "net=refused root=ok data=ok") {
		t.Errorf("the LSP server saw %q (gemkit's PID namespace is %s)", said, ns)
	}

	out, errOut, code = runPart(e, "", "twin", "monitor", "tick")
	if want := "first\nfrom " + src + "\nin " + e.ws + "\n"; code != ExitOK || out != want {
		t.Errorf("the monitor: exit %d, stdout %q, want %q\nstderr:\n%s", code, out, want, errOut)
	}

	for _, c := range []struct{ args, words []string }{
		{[]string{"twin", "lsp", "loose"}, []string{"names ${HOME}, which gemkit does not fill in"}},
		{[]string{"twin", "lsp", "none"}, []string{`has no LSP server "none"`}},
		{[]string{"twin", "monitor", "none"}, []string{`has 0 monitors named "none"`}},
		{[]string{"twin", "socket", "x"}, []string{`"socket" is no kind of part`}},
	} {
		if out, errOut, code := runPart(e, "", c.args...); code != ExitNo || out != "" || !strings.Contains(errOut, c.words[0]) {
			t.Errorf("%v: exit %d, stdout %q\nstderr:\n%s", c.args, code, out, errOut)
		}
	}

	// Changed after consent: nothing runs.
	must(t, os.WriteFile(filepath.Join(src, "monitors", "monitors.json"), []byte(`[{"name": "tick", "command": "echo changed", "description": "d"}]`), 0o644))
	if out, errOut, code := runPart(e, "", "twin", "monitor", "tick"); code != ExitNo || strings.Contains(out, "changed") || !strings.Contains(errOut, "as it is now") {
		t.Errorf("the changed monitor: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
}

// TestPluginPartUnprivileged runs TestPluginPart as uid 65534.
func TestPluginPartUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestPluginPart$")
}
