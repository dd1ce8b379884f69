package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// withEverything makes dir an extension whose server is the pinned
// server-everything of interop/mcp-servers, copied in as a published
// extension ships it.
func withEverything(t testing.TB, dir string) {
	t.Helper()
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-everything")); err != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "realmcp", "version": "1.0.0",
 "mcpServers": {"everything": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]}}}`})
}

// everythingServer is a Server of one extension whose server is the
// real server-everything, in gemkit's sandbox.
func everythingServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node (>= 20) is needed")
	}
	dir, ws, home := filepath.Join(t.TempDir(), "realmcp"), t.TempDir(), t.TempDir()
	withEverything(t, dir)
	return sandboxedServers(t, dir, ws, home, extmcp.Choice{})
}

// sandboxedServers is a Server of the extensions in dir, for the
// workspace ws, whose own MCP servers run in gemkit's sandbox with home
// for their data, each with the choice choice.
func sandboxedServers(t testing.TB, dir, ws, home string, choice extmcp.Choice) *Server {
	t.Helper()
	l := &sandbox.Launcher{}
	t.Cleanup(func() { l.Close() })
	m := extmcp.NewManager(extmcp.Config{Launcher: l, Workspace: ws, Timeout: 30 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, DataRoot: filepath.Join(home, "data"),
		Refusals: filepath.Join(home, "refusals.json"), Capabilities: filepath.Join(home, "caps.json")})
	t.Cleanup(m.Close)
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Servers: m,
		ChooseServers: func(*disclosure.Extension) extmcp.Choice { return choice }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lineWriter hands each line written to it to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func (w lineWriter) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-w:
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("no answer from the fast path within 30 s")
		return ""
	}
}

// TestFastCall: a tools/call of a tool of an extension's own MCP server
// (the real server-everything, sandboxed, running) answered by the stdio
// fast path, which forwards it and passes the server's result on as the
// server wrote it, is the same JSON value as what the SDK's server
// answers (which decodes the result and encodes it again, in other bytes:
// "<" escaped): text, an image, structured content, a tool error, a call
// the server refuses; the progress of a call with a token comes as the
// SDK sends it; a cancelled call gets no answer; and what the fast path
// must leave to the SDK (an unknown tool, a request of 2026-07-28, a
// notification) it leaves.
func TestFastCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-everything (node) in the sandbox: runs without -short, as in CI")
	}
	s := everythingServer(t)
	c := connect(t, s, true)
	c.call("tools/list", map[string]any{})
	if r := s.serverRoutes.Load(); r == nil || len(*r) == 0 {
		t.Fatal("no served tool of the server to take the fast path")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls fastCalls

	for _, line := range []string{
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"<b>hi</b> & ünï"}}}`,
		`{"jsonrpc":"2.0","id":"s-12","method":"tools/call","params":{"name":"realmcp_get-tiny-image"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"realmcp_get-structured-content","arguments":{"location":"New York"}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"realmcp_get-sum","arguments":{"a":"not a number"}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"realmcp_echo","arguments":null,"_meta":{"x":1}}}`,
		// An id written back as the SDK writes it: <, > and & as they are.
		`{"jsonrpc":"2.0","id":"<id> & é","method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"m"}}}`,
	} {
		fast := make(lineWriter, 8)
		forwarded := s.cfg.Servers.Forwarded()
		if !s.fastCall(ctx, &calls, []byte(line+"\n"), fast) {
			t.Fatalf("%s did not take the fast path", line)
		}
		got := fast.next(t)
		if s.cfg.Servers.Forwarded() != forwarded+1 {
			t.Errorf("%s: not forwarded to the running server", line)
		}
		c.send(line)
		if want := c.answer(); !sameJSON(got, want) {
			t.Errorf("%s: the fast path answered\n%s\nthe SDK\n%s", line, got, want)
		}
	}

	// Progress, under the client's token, then the answer.
	fast := make(lineWriter, 16)
	line := `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"realmcp_trigger-long-running-operation","arguments":{"duration":0.4,"steps":2},"_meta":{"progressToken":"tok"}}}`
	if !s.fastCall(ctx, &calls, []byte(line+"\n"), fast) {
		t.Fatal("a call with a progress token did not take the fast path")
	}
	// The fast path writes the server's progress and its answer in the
	// order the server sent them; the SDK's handler may write the last
	// progress after the answer (its session hands a notification on
	// apart from a result), so the two are compared in any order.
	var fastLines []string
	for len(fastLines) < 3 {
		fastLines = append(fastLines, fast.next(t))
	}
	if !strings.Contains(fastLines[2], `"id":21,`) {
		t.Errorf("the fast path wrote the answer before the server's progress:\n%s", strings.Join(fastLines, ""))
	}
	c.send(line)
	var sdkLines []string
	for len(sdkLines) < 3 {
		l, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(l, `"notifications/message"`) {
			sdkLines = append(sdkLines, l)
		}
	}
	if !sameJSONLines(fastLines, sdkLines) {
		t.Errorf("progress and answer: the fast path wrote\n%s\nthe SDK\n%s", strings.Join(fastLines, ""), strings.Join(sdkLines, ""))
	}

	// Cancelled: no answer follows.
	fast = make(lineWriter, 16)
	line = `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"realmcp_trigger-long-running-operation","arguments":{"duration":5,"steps":5}}}`
	if !s.fastCall(ctx, &calls, []byte(line+"\n"), fast) {
		t.Fatal("a long call did not take the fast path")
	}
	s.cancelled(&calls, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":31,"reason":"the person pressed Esc"}}`+"\n"))
	select {
	case l := <-fast:
		t.Errorf("a cancelled call was answered: %s", l)
	case <-time.After(1500 * time.Millisecond): // long enough for an answer the cancel did not stop
	}

	// Left to the SDK.
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"no_such_tool"}}`,
		`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_doc","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"x"}}}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"x"}}}`,
		`{"jsonrpc":"2.0","id":44,"method":"tools/list"}`,
	} {
		if s.fastCall(ctx, &calls, []byte(line+"\n"), io.Discard) {
			t.Errorf("the fast path took %s", line)
		}
	}
}

// sameJSON reports whether a and b are one JSON value each, the same.
func sameJSON(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

// sameJSONLines reports whether a and b hold the same JSON values, in
// any order.
func sameJSONLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	left := slices.Clone(b)
	for _, x := range a {
		i := slices.IndexFunc(left, func(y string) bool { return sameJSON(x, y) })
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

// TestServeStdioFastCallBeforeInitialize: a notifications/initialized
// before initialize (which the SDK refuses) does not open the fast path:
// a tools/call of a served server tool after it, before initialize, is
// the SDK's to refuse, on a Server whose tools a first session listed.
// The fast path took it and called the server.
func TestServeStdioFastCallBeforeInitialize(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-everything (node) in the sandbox: runs without -short, as in CI")
	}
	s := everythingServer(t)
	first := serveStdio(t, s)
	first.send(initWith("1"))
	first.next()
	first.send(initializedLine)
	first.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	first.next()
	first.close()
	if routes := s.serverRoutes.Load(); routes == nil || (*routes)["realmcp_echo"] == (serverRoute{}) || !s.serversListed() {
		t.Fatal("the first session did not list realmcp_echo")
	}
	r := serveStdio(t, s)
	r.send(initializedLine)
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"early"}}}`)
	if a := readAnswer(r.next()); a.Error == nil || !strings.Contains(a.Error.Message, "invalid during session initialization") {
		t.Errorf("the call before initialize was answered %s %+v", a.Result, a.Error)
	}
	if n := s.fastTaken.Load(); n != 0 {
		t.Errorf("the fast path took %d calls before initialize", n)
	}
}

// TestServeStdioFastCall: over ServeStdio, a call before the client says
// it is initialized goes to the SDK, after it to the fast path, and both
// answer.
func TestServeStdioFastCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-everything (node) in the sandbox: runs without -short, as in CI")
	}
	s := everythingServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(ctx, inR, outW) }()
	out := bufio.NewReader(outR)
	send := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id string) string {
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(l, `"id":`+id+`,`) {
				return l
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	answer("2")
	// Not initialized yet: the SDK's to answer.
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"early"}}}`)
	if early := answer("3"); !strings.Contains(early, `"text":"Echo: early"`) {
		t.Errorf("the call before initialized answered %s", early)
	}
	if n := s.fastTaken.Load(); n != 0 {
		t.Errorf("the fast path took %d calls before initialized", n)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"fast"}}}`)
	if got := answer("4"); !strings.Contains(got, `"text":"Echo: fast"`) {
		t.Errorf("the call after initialized answered %s", got)
	}
	if n := s.fastTaken.Load(); n != 1 {
		t.Errorf("the fast path took %d calls after initialized, want 1", n)
	}
	inW.Close()
	go io.Copy(io.Discard, out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
