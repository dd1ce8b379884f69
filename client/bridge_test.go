package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestBridgeFlows: a client whose HTTP endpoint fails (as Gemini CLI's
// does inside a container, dialling host.docker.internal) falls back to
// the discovery file's stdio command, which `gemkit ide serve` names:
// the real `gemkit ide bridge`. Through it the editor's context, an
// accepted diff (with the person's edits), a rejected one and closeDiff
// all work, with the token nowhere on a command line.
func TestBridgeFlows(t *testing.T) {
	p := startProc(t, companionCommands(t)["gemkit"])
	raw, err := os.ReadFile(p.ed.Ready.DiscoveryFile)
	if err != nil {
		t.Fatal(err)
	}
	var file ide.DiscoveryFile
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Stdio == nil || filepath.Base(file.Stdio.Command) != "gemkit" ||
		strings.Join(file.Stdio.Args, " ") != "ide bridge "+p.ed.Ready.DiscoveryFile {
		t.Fatalf("the discovery file's stdio command is %+v", file.Stdio)
	}
	if strings.Contains(strings.Join(file.Stdio.Args, " "), file.AuthToken) {
		t.Fatal("the token is on the bridge's command line")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 127.0.0.2 is loopback where nothing listens: the HTTP endpoint
	// fails at once, and nothing leaves this machine.
	c, plan, err := Connect(ctx, Options{Dir: p.dir, Cwd: p.ws, IDEPID: os.Getpid(), Host: "127.0.0.2", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("Connect: %v (plan %+v)", err, plan)
	}
	defer c.Close(context.Background())
	if ep := c.Endpoint(); ep.Transport != "stdio" || ep.Source != "file" {
		t.Fatalf("connected through %v, want the file's stdio command", ep)
	}
	if !c.DiffingEnabled() {
		t.Fatalf("diffing off: tools %v", c.Tools())
	}
	stdioFlowsThrough(t, c, p)
}

// stdioFlowsThrough plays context and diffs over a client connected to
// the scripted editor's companion.
func stdioFlowsThrough(t *testing.T, c *Client, p *procEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	updates := make(chan *ide.Context, 32)
	c.OnContext(func(v *ide.Context) { updates <- v })
	f := filepath.Join(p.ws, "a.txt")
	if err := os.WriteFile(f, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ed.Focus(f, 1, 2, "a")
	for {
		v := waitFor(t, updates, "the focused file through the bridge")
		if v != nil && v.WorkspaceState != nil && len(v.WorkspaceState.OpenFiles) == 1 && v.WorkspaceState.OpenFiles[0].SelectedText == "a" {
			break
		}
	}
	target := filepath.Join(p.ws, "x.go")
	type result struct {
		o   DiffOutcome
		err error
	}
	res := make(chan result, 1)
	go func() { o, err := c.OpenDiff(ctx, target, "proposal\n"); res <- result{o, err} }()
	if d := waitDiff(t, p.ed); d.FilePath != target || d.NewContent != "proposal\n" {
		t.Fatalf("diff %+v", d)
	}
	p.ed.Accept(target, "proposal\nedited\n")
	if r := waitFor(t, res, "the accepted diff"); r.err != nil || !r.o.Accepted || r.o.Content != "proposal\nedited\n" {
		t.Fatalf("accept: %+v %v", r.o, r.err)
	}
	go func() { o, err := c.OpenDiff(ctx, target, "no\n"); res <- result{o, err} }()
	waitDiff(t, p.ed)
	p.ed.Reject(target)
	if r := waitFor(t, res, "the rejected diff"); r.err != nil || r.o.Accepted {
		t.Fatalf("reject: %+v %v", r.o, r.err)
	}
	go func() { o, err := c.OpenDiff(ctx, target, "closed\n"); res <- result{o, err} }()
	waitDiff(t, p.ed)
	content, ok, err := c.CloseDiff(ctx, target)
	if err != nil || !ok || content != "closed\n" {
		t.Fatalf("closeDiff: %q %v %v", content, ok, err)
	}
}

// bridgeConn runs Bridge in process on pipes and returns the CLI's end.
type bridgeConn struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startBridge(t *testing.T, file string) *bridgeConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &bridgeConn{in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	b.out.Buffer(make([]byte, 64<<10), 64<<20)
	go func() {
		err := Bridge(context.Background(), BridgeOptions{File: file, In: inR, Out: outW})
		outW.Close()
		b.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return b
}

func (b *bridgeConn) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(b.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next reads the bridge's next message.
func (b *bridgeConn) next(t *testing.T) map[string]any {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		if b.out.Scan() {
			lines <- b.out.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the bridge closed its output")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not one JSON message per line: %q", l)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message from the bridge")
	}
	return nil
}

func (b *bridgeConn) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-b.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not end")
	}
	return nil
}

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stdio-client","version":"0.61.0"}}}`

// errorOf returns the message of a JSON-RPC error answer to id, or fails.
func errorOf(t *testing.T, m map[string]any, id float64) string {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if m["id"] != id || e == nil {
		t.Fatalf("want an error answer to %v, got %v", id, m)
	}
	s, _ := e["message"].(string)
	return s
}

// TestBridgeRefusals: what the bridge cannot relay is answered, with
// words a person can act on, to the request's own id; it never leaves the
// CLI waiting.
func TestBridgeRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Run("no file", func(t *testing.T) {
		b := startBridge(t, filepath.Join(dir, "gone.json"))
		b.send(t, initializeLine)
		if msg := errorOf(t, b.next(t), 0); !strings.Contains(msg, "gone.json") || !strings.Contains(msg, "no such file") {
			t.Errorf("message %q", msg)
		}
		if err := b.ended(t); err == nil {
			t.Error("the bridge ended without an error")
		}
	})
	t.Run("another user's file", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to give a file to another user (uid 65534); CI runs as root")
		}
		p := filepath.Join(dir, "theirs.json")
		if err := os.WriteFile(p, []byte(`{"port":1,"authToken":"x"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		b := startBridge(t, p)
		b.send(t, initializeLine)
		if msg := errorOf(t, b.next(t), 0); !strings.Contains(msg, "owned by uid 65534") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("closed port", func(t *testing.T) {
		p := filepath.Join(dir, "closed.json")
		if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"port":%d,"authToken":"x"}`, gemkittest.ClosedPort(t))), 0o600); err != nil {
			t.Fatal(err)
		}
		b := startBridge(t, p)
		b.send(t, initializeLine)
		if msg := errorOf(t, b.next(t), 0); !strings.Contains(msg, "cannot be reached") {
			t.Errorf("message %q", msg)
		}
		if err := b.ended(t); !errors.Is(err, ErrCompanionGone) {
			t.Errorf("ended with %v, want ErrCompanionGone", err)
		}
	})
}

// TestBridgeSession: the bridge relays the CLI's own initialize (the
// companion sees its name, version and protocol, and the client's
// process as the bridge's parent), carries the event stream's
// notifications, answers a request the companion refuses with the
// companion's words to the request's id, ends the session when the CLI
// closes its end, and ends (ErrCompanionGone) when the companion goes.
func TestBridgeSession(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	srv, err := companion.New(companion.Config{Workspace: []string{ws}, DiscoveryDir: dir, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-served }) }
	defer stop()
	<-srv.Ready()

	b := startBridge(t, srv.DiscoveryPath())
	b.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"streamable-http-client","version":"1.0.0"}}}`)
	init := b.next(t)
	if r, _ := init["result"].(map[string]any); r == nil || r["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize answer %v", init)
	}
	b.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := b.next(t); m["method"] != ide.MethodContextUpdate {
		t.Fatalf("the event stream's first message is %v, want the context", m)
	}
	// The server learns the bridged client's process on its own time, with
	// no event to wait on.
	var cl []companion.Client
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool { cl = srv.Clients(); return len(cl) == 1 && cl[0].PID != 0 }) {
		t.Fatalf("clients %+v, want the bridged one with its process", cl)
	}
	// In process, the bridge's connection is this test's own: no bridge
	// process stands between (TestBridgeRealClientInContainer has one).
	if c := cl[0]; c.Agent != companion.AgentQwen || c.Protocol != "2025-11-25" || c.PID != os.Getpid() || c.Bridged {
		t.Errorf("client %+v", c)
	}

	f := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Focus(f, &ide.Cursor{Line: 1, Character: 1}, "")
	for {
		m := b.next(t)
		if m["method"] == ide.MethodContextUpdate && strings.Contains(fmt.Sprint(m["params"]), f) {
			break
		}
	}

	// A proposal larger than the companion takes: its 413, with its
	// words, to the request's id.
	big, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "openDiff", "arguments": map[string]any{"filePath": f, "newContent": strings.Repeat("x", ide.MaxRequestBody)}}})
	b.send(t, string(big))
	if msg := errorOf(t, b.next(t), 7); !strings.Contains(msg, "HTTP 413") || !strings.Contains(msg, "larger than") {
		t.Errorf("message %q", msg)
	}

	// The CLI closes its end: the session ends with it.
	b.in.Close()
	if err := b.ended(t); err != nil {
		t.Fatalf("ended with %v", err)
	}
	// The server notices the real CLI left on its own time, with no event
	// to wait on.
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool { return len(srv.Clients()) == 0 }) {
		t.Fatalf("clients after the CLI left: %+v", srv.Clients())
	}

	// A second bridge: the companion goes away under it.
	b = startBridge(t, srv.DiscoveryPath())
	b.send(t, initializeLine)
	b.next(t)
	b.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.next(t)
	stop()
	if err := b.ended(t); !errors.Is(err, ErrCompanionGone) {
		t.Errorf("ended with %v, want ErrCompanionGone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, discovery.FileName(os.Getpid(), srv.Port()))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("discovery file: %v", err)
	}
}

// TestBridgeRealClientInContainer runs the real Gemini CLI client code
// (IdeClient of @google/gemini-cli-core 0.61.0, interop/ide-client-steps.mjs)
// as in a container (gemkittest.InContainer), with nothing in its
// environment but its home and temporary folder: it dials
// host.docker.internal, is refused, starts the discovery file's stdio
// command, and through `gemkit ide bridge` gets the editor's context and
// an accepted (edited) and a rejected diff.
func TestBridgeRealClientInContainer(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	p := startProc(t, companionCommands(t)["gemkit"])
	active := filepath.Join(p.ws, "a.txt")
	target := filepath.Join(p.ws, "b.txt")
	for _, f := range []string{active, target} {
		if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.ed.Focus(active, 1, 1, "")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := gemkittest.InContainer(t, node, filepath.Join(interop, "ide-client-steps.mjs"), interop, active, target)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = p.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + filepath.Dir(filepath.Dir(p.dir)), "NO_COLOR=1"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("client's stderr:\n%s", stderr.String())
		}
	}()
	steps := make(chan map[string]any, 8)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				steps <- m
			}
		}
		close(steps)
	}()
	next := func(want string) map[string]any {
		t.Helper()
		select {
		case m, ok := <-steps:
			if !ok || m["step"] != want {
				t.Fatalf("step %v, want %s", m, want)
			}
			return m
		case <-time.After(time.Minute):
			t.Fatalf("no %s step", want)
		}
		return nil
	}
	if m := next("connect"); m["status"] != "connected" || m["transport"] != ide.ClientNameStdio || m["diffing"] != true {
		t.Fatalf("connect: %v", m)
	}
	next("context")
	if d := waitDiff(t, p.ed); d.FilePath != target || d.NewContent != "proposal\n" {
		t.Fatalf("diff %+v", d)
	}
	p.ed.Accept(target, "proposal\nedited\n")
	if m := next("diff"); m["status"] != "accepted" || m["content"] != "proposal\nedited\n" {
		t.Fatalf("accepted diff: %v", m)
	}
	waitDiff(t, p.ed)
	p.ed.Reject(target)
	if m := next("diff"); m["status"] != "rejected" {
		t.Fatalf("rejected diff: %v", m)
	}
}
