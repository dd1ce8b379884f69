package editorproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
)

// recorder is an Events that records every call as a line of text.
type recorder struct {
	mu    sync.Mutex
	calls []string
	wsErr error
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) Focus(p string, c *ide.Cursor, sel string) {
	r.add(fmt.Sprintf("focus %s %v %q", p, c, sel))
}
func (r *recorder) Selection(p string, c ide.Cursor, sel string) {
	r.add(fmt.Sprintf("selection %s %v %q", p, c, sel))
}
func (r *recorder) Close(p string)           { r.add("close " + p) }
func (r *recorder) Rename(o, n string)       { r.add("rename " + o + " " + n) }
func (r *recorder) Delete(p string)          { r.add("delete " + p) }
func (r *recorder) DiffAccepted(p, c string) { r.add(fmt.Sprintf("accepted %s %q", p, c)) }
func (r *recorder) DiffRejected(p string)    { r.add("rejected " + p) }
func (r *recorder) UpdateWorkspace(paths []string, trusted *bool) error {
	t := "nil"
	if trusted != nil {
		t = fmt.Sprint(*trusted)
	}
	r.add(fmt.Sprintf("workspace %v %s", paths, t))
	return r.wsErr
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// pair runs a Conn over pipes: the test writes the editor's lines to in
// and reads gemkit's lines from out.
type pair struct {
	conn   *Conn
	in     *io.PipeWriter
	out    *bufio.Scanner
	ev     *recorder
	runErr chan error
}

func newPair(t *testing.T, o Options) *pair {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &pair{conn: New(inR, outW, o), in: inW, out: bufio.NewScanner(outR), ev: &recorder{}, runErr: make(chan error, 1)}
	go func() { p.runErr <- p.conn.Run(context.Background(), p.ev) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return p
}

func (p *pair) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// read returns gemkit's next line.
func (p *pair) read(t *testing.T) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		if p.out.Scan() {
			line <- p.out.Text()
		} else {
			line <- ""
		}
	}()
	select {
	case l := <-line:
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("no line from gemkit")
		return ""
	}
}

// sync sends a request gemkit answers, so that every earlier line has
// been handled.
func (p *pair) sync(t *testing.T) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":"sync","method":"editor/close","params":{"path":"/sync"}}`)
	if got := p.read(t); got != `{"jsonrpc":"2.0","id":"sync","result":{}}` {
		t.Fatalf("sync reply: %s", got)
	}
}

func TestWorkspaceUpdateError(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		code  string
		cause string
	}{
		{"bad folder", &companion.InvalidWorkspaceError{Err: errors.New("folder missing")}, `"code":-32602`, "folder missing"},
		{"disk full", fmt.Errorf("rewrite discovery file: %w", errors.New("no space left on device")), `"code":-32603`, "no space left on device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, Options{})
			p.ev.wsErr = tt.err
			p.send(t, `{"jsonrpc":"2.0","id":1,"method":"workspace/update","params":{"paths":["/gone"]}}`)
			if got := p.read(t); !strings.Contains(got, tt.code) || !strings.Contains(got, tt.cause) {
				t.Fatalf("reply %s, want %s with %q", got, tt.code, tt.cause)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	p := newPair(t, Options{MaxLine: 100})
	p.send(t, `{"jsonrpc":"2.0","method":"editor/focus","params":{"path":"/`+strings.Repeat("a", 200)+`"}}`)
	if got := p.read(t); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "line longer than 100 bytes") {
		t.Fatalf("reply %s", got)
	}
	p.sync(t)
}

func TestRequestsToEditor(t *testing.T) {
	p := newPair(t, Options{RequestTimeout: 200 * time.Millisecond})
	ctx := context.Background()

	// diff/open answered with {}.
	errc := make(chan error, 1)
	go func() { errc <- p.conn.OpenDiff(ctx, "/w/a.go", "new\n") }()
	req := p.read(t)
	if req != `{"jsonrpc":"2.0","id":1,"method":"diff/open","params":{"filePath":"/w/a.go","newContent":"new\n"}}` {
		t.Fatalf("request %s", req)
	}
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	// diff/open answered with an error.
	go func() { errc <- p.conn.OpenDiff(ctx, "/w/a.go", "x") }()
	p.read(t)
	p.send(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"no room"}}`)
	var rpcErr *Error
	if err := <-errc; !errors.As(err, &rpcErr) || rpcErr.Message != "no room" {
		t.Fatalf("err %v", err)
	}

	// diff/open not answered in time.
	go func() { errc <- p.conn.OpenDiff(ctx, "/w/a.go", "x") }()
	p.read(t)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "did not answer diff/open within") {
		t.Fatalf("err %v", err)
	}
	p.send(t, `{"jsonrpc":"2.0","id":3,"result":{}}`) // late: logged, ignored

	// diff/close with content, with null, and with a bad result.
	type closeRes struct {
		content string
		ok      bool
		err     error
	}
	cc := make(chan closeRes, 1)
	for i, tt := range []struct {
		reply   string
		want    string
		wantOK  bool
		wantErr bool
	}{
		{`{"content":"right\n"}`, "right\n", true, false},
		{`{"content":null}`, "", false, false},
		{`{}`, "", false, false},
		{`{"content":5}`, "", false, true},
	} {
		go func() {
			c, ok, err := p.conn.CloseDiff(ctx, "/w/a.go")
			cc <- closeRes{c, ok, err}
		}()
		req := p.read(t)
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"diff/close","params":{"filePath":"/w/a.go"}}`, 4+i); req != want {
			t.Fatalf("request %s", req)
		}
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, 4+i, tt.reply))
		r := <-cc
		if r.content != tt.want || r.ok != tt.wantOK || (r.err != nil) != tt.wantErr {
			t.Fatalf("reply %s: got %+v", tt.reply, r)
		}
	}

	// file/written and server/ready are notifications.
	go p.conn.FileWritten(ctx, "/w/a.go")
	if got := p.read(t); got != `{"jsonrpc":"2.0","method":"file/written","params":{"path":"/w/a.go"}}` {
		t.Fatalf("file/written: %s", got)
	}
	go p.conn.SendReady(Ready{Port: 5, DiscoveryFile: "/tmp/f.json"})
	if got := p.read(t); got != `{"jsonrpc":"2.0","method":"server/ready","params":{"port":5,"discoveryFile":"/tmp/f.json","env":{}}}` {
		t.Fatalf("server/ready: %s", got)
	}
}

// TestEditorGoesAway: at EOF Run returns nil and pending requests fail at
// once instead of waiting for their timeout.
func TestEditorGoesAway(t *testing.T) {
	p := newPair(t, Options{RequestTimeout: time.Minute})
	errc := make(chan error, 1)
	go func() { errc <- p.conn.OpenDiff(context.Background(), "/a", "x") }()
	p.read(t)
	p.send(t, `{"jsonrpc":"2.0","method":"editor/focus","params":{"path":"/last"}}`)
	p.in.Close()
	select {
	case err := <-p.runErr:
		if err != nil {
			t.Fatalf("Run at EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return at EOF")
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending request: %v", err)
	}
	if err := p.conn.OpenDiff(context.Background(), "/a", "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("request after close: %v", err)
	}
	select {
	case <-p.conn.Done():
	default:
		t.Fatal("Done not closed")
	}
	if got := p.ev.all(); len(got) != 1 {
		t.Fatalf("the last line before EOF was lost: %v", got)
	}
}

// TestLastLineWithoutNewline: a final line without a newline still counts.
func TestLastLineWithoutNewline(t *testing.T) {
	p := newPair(t, Options{})
	io.WriteString(p.in, `{"jsonrpc":"2.0","method":"editor/close","params":{"path":"/x"}}`)
	p.in.Close()
	<-p.runErr
	if got := p.ev.all(); len(got) != 1 || got[0] != "close /x" {
		t.Fatalf("events %v", got)
	}
}

func TestMessagesAreSingleLines(t *testing.T) {
	p := newPair(t, Options{})
	go p.conn.OpenDiff(context.Background(), "/a", "line1\nline2\n")
	got := p.read(t)
	var m map[string]any
	if err := json.Unmarshal([]byte(got), &m); err != nil {
		t.Fatalf("not one JSON line: %s", got)
	}
}

// TestInvalidTextRefused: diff/accepted content (or any line) that is not
// valid UTF-8, or holds a lone surrogate escape, is answered -32602 — even
// as a notification, since staying silent would lose the outcome — and
// never reaches the companion changed.
func TestInvalidTextRefused(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"latin-1 notification", "{\"jsonrpc\":\"2.0\",\"method\":\"diff/accepted\",\"params\":{\"filePath\":\"/a\",\"content\":\"caf\xe9\"}}",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params for diff/accepted: the text is not valid UTF-8 (first bad byte 0xE9 at byte offset 82); send file content as UTF-8"}}`},
		{"latin-1 request", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"diff/accepted\",\"params\":{\"filePath\":\"/a\",\"content\":\"caf\xe9\"}}",
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params for diff/accepted: the text is not valid UTF-8 (first bad byte 0xE9 at byte offset 89); send file content as UTF-8"}}`},
		{"lone surrogate", `{"jsonrpc":"2.0","id":5,"method":"diff/accepted","params":{"filePath":"/a","content":"a\ud800"}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params for diff/accepted: the text holds a lone UTF-16 surrogate escape \\uD800 at byte offset 87, which is not a character; send file content as valid Unicode"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, Options{})
			p.send(t, tt.line)
			if got := p.read(t); got != tt.want {
				t.Fatalf("reply\n got %s\nwant %s", got, tt.want)
			}
			p.sync(t)
			if got := p.ev.all(); len(got) != 1 {
				t.Fatalf("events from a refused line: %v", got)
			}
		})
	}
}
