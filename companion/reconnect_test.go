package companion

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
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
