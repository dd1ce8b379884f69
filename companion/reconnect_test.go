package companion

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// sseConn is an event stream read straight off its socket, so that a test
// closes the client's end at the moment it chooses.
type sseConn struct {
	net.Conn
	r *bufio.Reader
}

// openSSE opens session sid's event stream on a connection of its own,
// with Last-Event-ID when lastID is not "".
func openSSE(t *testing.T, srv *Server, sid, lastID string) *sseConn {
	t.Helper()
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.Port()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n%s: %s\r\n%s: %s\r\n",
		ide.MCPPath, srv.Port(), srv.Token(), ide.HeaderSessionID, sid, ide.HeaderProtocolVersion, ide.ProtocolVersion)
	if lastID != "" {
		req += "Last-Event-ID: " + lastID + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	c := &sseConn{Conn: conn, r: bufio.NewReader(conn)}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	// The body is chunked; the events are read from the decoded body.
	c.r = bufio.NewReader(resp.Body)
	return c
}

// next reads the next event: its id ("" when none) and data.
func (c *sseConn) next(t *testing.T) (id, data string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			return id, data
		}
	}
}

// nextOutcome reads events until a diff outcome, and returns it.
func (c *sseConn) nextOutcome(t *testing.T) (id, data string) {
	t.Helper()
	for {
		id, data = c.next(t)
		if strings.Contains(data, ide.MethodDiffRejected) {
			return id, data
		}
	}
}

// leaveAt makes the client's end of the connection sent on conns close
// just before the server first writes an event whose data holds marker,
// on a stream opened from now on: the write then goes into a socket whose
// peer has gone, and succeeds. The returned channel is closed once the
// client's end is.
func leaveAt(srv *Server, marker string, conns <-chan net.Conn) <-chan struct{} {
	left := make(chan struct{})
	var once sync.Once
	hook := func(msg []byte) {
		if bytes.Contains(msg, []byte(marker)) {
			once.Do(func() {
				(<-conns).Close()
				close(left)
			})
		}
	}
	srv.testBeforeEventWrite.Store(&hook)
	return left
}

// TestOutcomeWrittenAsClientLeaves: an outcome written just after the
// client's end of its event stream closed (its write succeeds, into a
// socket nobody reads) reaches the client on the stream it opens next, in
// order, whether or not the client names the last event it read. The
// companion took a successful write for a delivered one and lost it
// (issue 76): Gemini CLI waited on "Apply this change?" for a decision
// the editor had already sent.
func TestOutcomeWrittenAsClientLeaves(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("Last-Event-ID=%v", resume), func(t *testing.T) {
			ws := t.TempDir()
			srv := startServer(t, Config{Editor: newFakeEditor(), Workspace: []string{ws}})
			c := dial(t, srv)
			c.closeGET()
			conns := make(chan net.Conn, 1)
			left := leaveAt(srv, `/f1"`, conns)
			first := openSSE(t, srv, c.sid, "")
			conns <- first.Conn

			paths := make([]string, 3)
			for i := range paths {
				paths[i] = filepath.Join(ws, fmt.Sprintf("f%d", i))
				c.callTool(ide.ToolOpenDiff, map[string]any{"filePath": paths[i], "newContent": "x"})
			}
			srv.DiffRejected(paths[0])
			lastID, data := first.nextOutcome(t)
			if !strings.Contains(data, `f0"`) || lastID == "" {
				t.Fatalf("first outcome: id %q, %s", lastID, data)
			}
			srv.DiffRejected(paths[1]) // written as the client leaves
			<-left
			srv.DiffRejected(paths[2])

			if !resume {
				lastID = ""
			}
			second := openSSE(t, srv, c.sid, lastID)
			for _, want := range []string{"f1", "f2"} {
				_, data := second.nextOutcome(t)
				if !strings.Contains(data, want+`"`) {
					t.Fatalf("after the reconnect: got %s, want the outcome of %s", data, want)
				}
			}
		})
	}
}

// TestRealClientOutcomeAcrossReconnect: the REAL Gemini CLI client
// (IdeClient of @google/gemini-cli-core 0.61.0, interop/ide-client-steps.mjs)
// has its event stream cut just as the companion writes the outcome of its
// diff. Its SDK opens the stream again (with Last-Event-ID), the outcome
// arrives there, and the client's openDiff resolves: it does not wait on
// "Apply this change?" forever. Its next diff goes through as usual.
func TestRealClientOutcomeAcrossReconnect(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ed := newFakeEditor()
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: ed})
	proxy := gemkittest.NewCutProxy(t, srv.Port())
	var once sync.Once
	hook := func(msg []byte) {
		if bytes.Contains(msg, []byte(ide.MethodDiffRejected)) {
			once.Do(func() {
				// The event stream's connection, perhaps one an earlier
				// POST used.
				proxy.Cut(func(req []byte) bool { return bytes.HasPrefix(req, []byte("GET ")) })
			})
		}
	}
	srv.testBeforeEventWrite.Store(&hook)
	tmp := proxiedDiscovery(t, srv, proxy.Port)

	active, target := writeFile(t, ws, "a.txt", "a\n"), writeFile(t, ws, "b.txt", "old\n")
	srv.Focus(active, cur(1, 1), "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interop, "ide-client-steps.mjs"), interop, active, target)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "HOME=" + t.TempDir(),
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22"} // not "in a container" even where /.dockerenv exists
	var stderr bytes.Buffer
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
			t.Logf("the client's log:\n%s", stderr.String())
		}
	}()
	steps := bufio.NewScanner(out)
	next := func(want string) map[string]any {
		t.Helper()
		if !steps.Scan() {
			t.Fatalf("the client ended before its %s step", want)
		}
		var m map[string]any
		if err := json.Unmarshal(steps.Bytes(), &m); err != nil || m["step"] != want {
			t.Fatalf("step %s, want %s", steps.Bytes(), want)
		}
		return m
	}
	if m := next("connect"); m["status"] != "connected" {
		t.Fatalf("connect: %v", m)
	}
	next("context")
	<-ed.openCh
	srv.DiffRejected(target) // its stream is cut as this is written
	if m := next("diff"); m["status"] != "rejected" {
		t.Fatalf("the diff whose outcome was written as the stream was cut: %v", m)
	}
	<-ed.openCh
	srv.DiffAccepted(target, "second\n")
	if m := next("diff"); m["status"] != "accepted" || m["content"] != "second\n" {
		t.Fatalf("the next diff: %v", m)
	}
}

// TestWebSocketLostAnswerIsTold: on the WebSocket endpoints a client that
// comes back is a new session, which no protocol lets the companion
// resume; so an outcome written just after a client's end closed (the
// write succeeds into a socket nobody reads) is told to the person, never
// dropped without a word: Claude Code's answer to its openDiff, and a
// /stream client's outcome notification.
func TestWebSocketLostAnswerIsTold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marker string // in the message written as the client leaves
		// dial connects through the proxy's port and returns a path
		// whose diff is waiting for the person.
		dial   func(t *testing.T, srv *Server, port int, path string)
		answer func(srv *Server, path string)
		want   string
	}{
		{"Claude Code", "FILE_SAVED", func(t *testing.T, srv *Server, port int, path string) {
			c := dialWS(t, fmt.Sprintf("ws://127.0.0.1:%d/", port), http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}}, "mcp")
			c.initialize()
			c.send(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
				"name": claudeToolOpenDiff, "arguments": map[string]any{"old_file_path": path, "new_file_path": path, "new_file_contents": "new\n", "tab_name": "t"}}})
		}, func(srv *Server, path string) { srv.DiffAccepted(path, "new\n") },
			"Claude Code's connection closed before it received the answer to its diff of "},
		{"/stream", ide.MethodDiffRejected, func(t *testing.T, srv *Server, port int, path string) {
			c := dialWS(t, fmt.Sprintf("ws://127.0.0.1:%d%s", port, StreamPath), http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
			c.initialize()
			if r := c.tool(ide.ToolOpenDiff, map[string]any{"filePath": path, "newContent": "new\n"}, 30*time.Second); r.IsError {
				t.Fatalf("openDiff: %v", r.texts())
			}
		}, func(srv *Server, path string) { srv.DiffRejected(path) },
			"a /stream client's connection closed before it received the rejection of its diff of "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &gemkittest.Output{}
			ed := newFakeEditor()
			srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			path := writeFile(t, srv.workspaceSnapshot()[0], "a.txt", "old\n")
			port := srv.Port()
			if tc.name == "Claude Code" {
				port = srv.ClaudePort()
			}
			proxy := gemkittest.NewCutProxy(t, port)
			var once sync.Once
			hook := func(msg []byte) {
				if bytes.Contains(msg, []byte(tc.marker)) {
					once.Do(func() { proxy.Cut(func([]byte) bool { return true }) })
				}
			}
			srv.testBeforeEventWrite.Store(&hook)
			tc.dial(t, srv, proxy.Port, path)
			<-ed.openCh
			tc.answer(srv, path)
			logs.WaitFor(t, "the warning that "+tc.want, func(s string) bool {
				return strings.Contains(s, tc.want+path)
			})
		})
	}
}
