package lspserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// TestMain lets this test binary be the planted socket's process of
// TestGroupForeignSocket, run as another user, when $GEMKIT_LSP_PLANT
// names the socket.
func TestMain(m *testing.M) {
	if path := os.Getenv("GEMKIT_LSP_PLANT"); path != "" {
		plantSocket(path)
		return
	}
	os.Exit(m.Run())
}

// plantSocket listens on the group socket path and copies what it is sent
// to path.got, until its stdin closes (the test that started it has gone,
// even if killed).
func plantSocket(path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "planted socket:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fail(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		fail(err)
	}
	got, err := os.OpenFile(path+".got", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(path+".ready", nil, 0o666); err != nil {
		fail(err)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go io.Copy(got, conn)
	}
}

// TestGroupForeignSocket: a socket another user put at this editor's
// group path (the discovery directory is $TMPDIR/gemini/ide, which the
// first user to run Gemini CLI may have created for everyone) is not
// joined: the server would pass it the text of every file the editor
// opens. The server starts its own companion instead.
func TestGroupForeignSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the planted socket's process as another user (uid 65534); CI runs as root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed: apt-get install util-linux")
	}
	dir, err := os.MkdirTemp("", "gemkit-lspgroup-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lspserver.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	sock := GroupPath(dir, 4343, []string{ws})
	helper := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	helper.Env = []string{"GEMKIT_LSP_PLANT=" + sock, "PATH=/usr/bin:/bin"}
	helper.Stderr = os.Stderr
	alive, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		alive.Close()
		helper.Process.Kill()
		helper.Wait()
	})
	// The other user's process makes its ready file on its own time.
	if !gemkittest.Poll(waitTimeout, 20*time.Millisecond, func() bool {
		_, err := os.Stat(sock + ".ready")
		return err == nil
	}) {
		t.Fatal("the planted socket never listened")
	}

	c := start(t, Options{Group: func(Init) string { return sock }})
	c.request(1, "initialize", map[string]any{"processId": 4343, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	if m := c.next(); m["result"] == nil {
		t.Fatalf("initialize answered %s", js(m))
	}
	select {
	case <-c.init:
	case <-time.After(waitTimeout):
		t.Fatal("the server joined another user's socket instead of starting a companion of its own")
	}
	secret := filepath.Join(ws, "secret.go")
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(secret), "languageId": "go", "version": 0, "text": "package secret\n"}})
	c.ev.wait(t, "focus "+secret)
	// A sleep: what is checked is that nothing reaches the other user's
	// socket, which no event can say.
	time.Sleep(100 * time.Millisecond)
	if b, _ := os.ReadFile(sock + ".got"); len(b) > 0 {
		t.Fatalf("another user's socket got %q", b)
	}
}

// TestGroupNoShutdownFromSocket: a process on the group's socket cannot
// shut the leader down for its own client.
func TestGroupNoShutdownFromSocket(t *testing.T) {
	ws := t.TempDir()
	sock := GroupPath(t.TempDir(), 4444, []string{ws})
	lead := start(t, Options{Group: func(Init) string { return sock }})
	lead.initialize(map[string]any{"processId": 4444, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	var conn net.Conn
	var err error
	// The socket exists once the server made it, with no event to wait on.
	gemkittest.Poll(waitTimeout, 10*time.Millisecond, func() bool {
		conn, err = net.Dial("unix", sock)
		return err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(frame([]byte(`{"jsonrpc":"2.0","id":1,"method":"shutdown"}`))); err != nil {
		t.Fatal(err)
	}
	body, err := jsonrpc.HeaderFramer().NewReader(conn, 1<<20).Next()
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Error *Error }
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("shutdown through the socket answered %s", body)
	}
	lead.request(2, "textDocument/documentHighlight", map[string]any{"textDocument": map[string]any{"uri": uriOf(filepath.Join(ws, "a.go"))}, "position": Position{}})
	if r := lead.next(); r["error"] != nil {
		t.Fatalf("the leader refuses its own client after a shutdown through the socket: %s", js(r))
	}
}

// TestGroupFollowerGone: a follower whose client goes without closing its
// documents (eglot-shutdown of one of an editor's servers, Helix
// restarting one) takes them out of the context; a proposal waiting in
// one is rejected and its buffer's text put back.
func TestGroupFollowerGone(t *testing.T) {
	ws := t.TempDir()
	sock := GroupPath(t.TempDir(), 4545, []string{ws})
	group := func(Init) string { return sock }
	lead, follower := startGroup(t, group, 4545, ws)
	a, b := filepath.Join(ws, "a.go"), filepath.Join(ws, "b.go")
	for _, p := range []string{a, b} {
		follower.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(p), "languageId": "go", "version": 0, "text": "x\n"}})
		lead.ev.wait(t, "focus "+p)
	}
	lead.showProposal(t, b, "y\n")
	// The buffer is the follower's client's: it reports the proposal.
	follower.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uriOf(b), "version": 1}, "contentChanges": []map[string]any{{"text": "y\n"}}})
	follower.request(2, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": uriOf(b)}, "range": Range{}, "context": map[string]any{}})
	if m := follower.next(); m["id"] != float64(2) {
		t.Fatalf("got %s", js(m))
	}
	follower.in.Close()
	for {
		m := lead.next()
		if m["method"] != "workspace/applyEdit" {
			continue
		}
		if got := applyTo("y\n", editOf(t, m, uriOf(b))); got != "x\n" {
			t.Fatalf("the buffer is put back as %q", got)
		}
		lead.answer(m, map[string]any{"applied": true})
		break
	}
	lead.ev.wait(t, "rejected "+b)
	lead.ev.wait(t, "close "+b)
	lead.ev.wait(t, "close "+a)
}

// TestGroupSocketGoneWithRun: the leader's socket is gone when Run
// returns, not at some point after: `gemkit ide serve --editor lsp`
// exits right then, and a socket left behind would stay in the
// discovery directory.
func TestGroupSocketGoneWithRun(t *testing.T) {
	ws := t.TempDir()
	sock := GroupPath(t.TempDir(), 4646, []string{ws})
	lead := start(t, Options{Group: func(Init) string { return sock }})
	lead.initialize(map[string]any{"processId": 4646, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	// The socket exists once the server made it, with no event to wait on.
	if !gemkittest.Poll(waitTimeout, 10*time.Millisecond, func() bool { _, err := os.Stat(sock); return err == nil }) {
		t.Fatal("the leader made no socket")
	}
	lead.in.Close()
	select {
	case err := <-lead.done:
		lead.done <- err // for start's cleanup
	case <-time.After(waitTimeout):
		t.Fatal("the server did not stop when its input closed")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the group's socket is still there when Run returned (stat: %v)", err)
	}
}
