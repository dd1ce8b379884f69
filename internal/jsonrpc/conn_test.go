package jsonrpc

import (
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

	"github.com/gemkit/gemkit/internal/gemkittest"
)

const waitTimeout = 10 * time.Second

// end is a Conn under test and the raw other end of its streams: the
// test writes the peer's messages and reads the Conn's.
type end struct {
	t      *testing.T
	conn   *Conn
	framer Framer
	in     *io.PipeWriter // the peer's writes
	out    chan string    // the Conn's messages
	log    *gemkittest.Output
	runErr chan error
}

func newEnd(t *testing.T, o Options, h Handler) *end {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	log := &gemkittest.Output{}
	o.Logger = slog.New(slog.NewTextHandler(log, nil))
	if o.Framer == nil {
		o.Framer = LineFramer()
	}
	e := &end{t: t, conn: NewConn(inR, outW, o), framer: o.Framer, in: inW, out: make(chan string, 100), log: log, runErr: make(chan error, 1)}
	go func() {
		fr := o.Framer.NewReader(outR, 1<<20)
		for {
			b, err := fr.Next()
			if err != nil {
				close(e.out)
				return
			}
			e.out <- string(b)
		}
	}()
	go func() { e.runErr <- e.conn.Run(context.Background(), h) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return e
}

// send writes one message of the peer's, framed.
func (e *end) send(msg string) {
	e.t.Helper()
	if _, err := e.in.Write(e.framer.Frame([]byte(msg))); err != nil {
		e.t.Fatal(err)
	}
}

// next returns the Conn's next message.
func (e *end) next() string {
	e.t.Helper()
	select {
	case m, ok := <-e.out:
		if !ok {
			e.t.Fatal("the Conn's output ended")
		}
		return m
	case <-time.After(waitTimeout):
		e.t.Fatal("no message from the Conn")
	}
	return ""
}

// echo answers every request with its method and params, and records
// the notifications.
type echo struct {
	mu    sync.Mutex
	notes []string
}

func (h *echo) Handle(_ context.Context, r Request) (any, error) {
	if r.IsNotification() {
		h.mu.Lock()
		h.notes = append(h.notes, r.Method+" "+string(r.Params))
		h.mu.Unlock()
		return nil, nil
	}
	return map[string]any{"method": r.Method, "params": r.Params}, nil
}

// TestCall: a call's answer, error answer, undecodable answer, and a
// call nobody answers, with their errors' words.
func TestCall(t *testing.T) {
	for _, o := range []Options{{}, {Framer: HeaderFramer(), Peer: "editor", ErrorPrefix: "LSP"}} {
		e := newEnd(t, o, &echo{})
		peer, prefix := "peer", "peer"
		if o.Peer != "" {
			peer, prefix = o.Peer, o.ErrorPrefix
		}
		type answer struct {
			res map[string]int
			err error
		}
		call := func(timeout time.Duration) chan answer {
			ch := make(chan answer, 1)
			go func() {
				var a answer
				a.err = e.conn.Call(context.Background(), timeout, "m", map[string]int{"x": 1}, &a.res)
				ch <- a
			}()
			return ch
		}
		got := call(0)
		if m := e.next(); m != `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1}}` {
			t.Fatalf("call written as %s", m)
		}
		e.send(`{"jsonrpc":"2.0","id":1,"result":{"y":2}}`)
		if a := <-got; a.err != nil || a.res["y"] != 2 {
			t.Fatalf("answer %+v", a)
		}

		got = call(0)
		e.next()
		e.send(`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"no room","data":[1]}}`)
		var rpcErr *Error
		if a := <-got; !errors.As(a.err, &rpcErr) || rpcErr.Code != -32001 || string(rpcErr.Data) != "[1]" || a.err.Error() != prefix+" error -32001: no room" {
			t.Fatalf("error answer: %v", a.err)
		}

		got = call(0)
		e.next()
		e.send(`{"jsonrpc":"2.0","id":3,"result":{"y":"two"}}`)
		if a := <-got; a.err == nil || !strings.HasPrefix(a.err.Error(), peer+"'s answer to m: ") {
			t.Fatalf("undecodable answer: %v", a.err)
		}

		got = call(50 * time.Millisecond)
		e.next()
		if a := <-got; a.err == nil || a.err.Error() != "the "+peer+" did not answer m within 50ms" {
			t.Fatalf("no answer: %v", a.err)
		}
		// Late: logged, and no cancellation where the protocol has none.
		e.send(`{"jsonrpc":"2.0","id":4,"result":{}}`)
		e.send(`{"jsonrpc":"2.0","id":"a","result":{}}`) // an id gemkit never uses
		e.send(`{"jsonrpc":"2.0","id":"x","method":"sync"}`)
		if m := e.next(); !strings.Contains(m, `"id":"x"`) {
			t.Fatalf("after a late answer: %s", m)
		}
		if log := e.log.String(); !strings.Contains(log, `response to no pending request (late, unknown or never used)" id=4`) ||
			!strings.Contains(log, `response to no pending request (late, unknown or never used)" id="\"a\""`) {
			t.Fatalf("late answer not logged: %s", e.log)
		}
	}
}

// TestCallCancelled: with a CancelMethod, a call whose context ends is
// cancelled at the peer, whose late answer is then dropped quietly.
func TestCallCancelled(t *testing.T) {
	e := newEnd(t, Options{Framer: HeaderFramer(), CancelMethod: "$/cancelRequest"}, &echo{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.conn.Call(ctx, 0, "textDocument/references", map[string]any{}, nil) }()
	e.next()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "textDocument/references: ") {
		t.Fatalf("cancelled call: %v", err)
	}
	if m := e.next(); m != `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}` {
		t.Fatalf("cancellation %s", m)
	}
	e.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`)
	e.send(`{"jsonrpc":"2.0","id":"x","method":"sync"}`)
	e.next()
	if strings.Contains(e.log.String(), "no pending request") {
		t.Fatalf("the answer to a cancelled call was logged: %s", e.log)
	}
	// A call timed out is cancelled the same way.
	go func() { errc <- e.conn.Call(context.Background(), 10*time.Millisecond, "slow", nil, nil) }()
	e.next()
	<-errc
	if m := e.next(); m != `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}` {
		t.Fatalf("cancellation %s", m)
	}
}

// TestEnd: at the end of the stream Run returns io.EOF; the calls waiting
// and those after fail with ErrClosed at once, and Done is closed.
func TestEnd(t *testing.T) {
	closed := errors.New("gone")
	e := newEnd(t, Options{ErrClosed: closed}, &echo{})
	errc := make(chan error, 1)
	go func() { errc <- e.conn.Call(context.Background(), time.Minute, "m", nil, nil) }()
	e.next()
	e.in.Close()
	if err := <-e.runErr; err != io.EOF {
		t.Fatalf("Run at the end: %v", err)
	}
	if err := <-errc; err != closed {
		t.Fatalf("a waiting call: %v", err)
	}
	if err := e.conn.Call(context.Background(), 0, "m", nil, nil); err != closed {
		t.Fatalf("a call after the end: %v", err)
	}
	select {
	case <-e.conn.Done():
	default:
		t.Fatal("Done not closed")
	}

	// Inside a message: io.ErrUnexpectedEOF.
	e = newEnd(t, Options{Framer: HeaderFramer()}, &echo{})
	io.WriteString(e.in, "Content-Length: 9\r\n\r\n{}")
	e.in.Close()
	if err := <-e.runErr; err != io.ErrUnexpectedEOF {
		t.Fatalf("Run cut short: %v", err)
	}
}

// TestHandler: what a handler returns is the answer; ErrNoReply leaves it
// to Reply; notifications get none; Stop ends Run before the next message.
func TestHandler(t *testing.T) {
	later := make(chan json.RawMessage, 1)
	var handled []string
	var e *end
	h := HandlerFunc(func(_ context.Context, r Request) (any, error) {
		handled = append(handled, r.Method)
		switch r.Method {
		case "result":
			return []int{1}, nil
		case "null":
			return nil, nil
		case "rpc-error":
			return nil, fmt.Errorf("wrapped: %w", &Error{Code: CodeInvalidParams, Message: "Invalid params for rpc-error: no"})
		case "go-error":
			return nil, errors.New("disk full")
		case "nil-error":
			var err *Error
			return "ok", err
		case "later":
			later <- r.ID
			return nil, ErrNoReply
		case "stop":
			e.conn.Stop(errors.New("stopped"))
		}
		return nil, nil
	})
	e = newEnd(t, Options{}, h)
	for _, tt := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"result"}`, `{"jsonrpc":"2.0","id":1,"result":[1]}`},
		{`{"jsonrpc":"2.0","id":"2","method":"null","params":{}}`, `{"jsonrpc":"2.0","id":"2","result":null}`},
		{`{"jsonrpc":"2.0","id":3,"method":"rpc-error"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params for rpc-error: no"}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"go-error"}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"disk full"}}`},
		{`{"jsonrpc":"2.0","id":5,"method":"nil-error"}`, `{"jsonrpc":"2.0","id":5,"result":"ok"}`},
	} {
		e.send(tt.send)
		if got := e.next(); got != tt.want {
			t.Fatalf("%s answered\n%s, want\n%s", tt.send, got, tt.want)
		}
	}
	e.send(`{"jsonrpc":"2.0","method":"result"}`) // a notification: no answer
	e.send(`{"jsonrpc":"2.0","id":null,"method":"null"}`)
	e.send(`{"jsonrpc":"2.0","id":6,"method":"later"}`)
	id := <-later
	e.conn.Reply(id, map[string]bool{"done": true}, nil)
	if got := e.next(); got != `{"jsonrpc":"2.0","id":6,"result":{"done":true}}` {
		t.Fatalf("answered later: %s", got)
	}
	e.send(`{"jsonrpc":"2.0","method":"stop"}` + "\n" + `{"jsonrpc":"2.0","method":"after"}`)
	if err := <-e.runErr; err == nil || err.Error() != "stopped" {
		t.Fatalf("Run after Stop: %v", err)
	}
	if got := strings.Join(handled, " "); got != "result null rpc-error go-error nil-error result null later stop" {
		t.Fatalf("handled %s", got)
	}
	if err := e.conn.Notify("file/written", map[string]string{"path": "/a"}); err != nil {
		t.Fatal(err)
	}
	if got := e.next(); got != `{"jsonrpc":"2.0","method":"file/written","params":{"path":"/a"}}` {
		t.Fatalf("notification written as %s", got)
	}
}

// TestMalformed: the answers to malformed messages, the same over both
// framings, in the default wording.
func TestMalformed(t *testing.T) {
	tests := []struct{ name, send, want string }{
		{"not JSON", `hello`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid character 'h' looking for beginning of value"}}`},
		{"cut short", `{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}`},
		{"a number", `5`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message must be one JSON-RPC object"}}`},
		{"a batch", `[{"jsonrpc":"2.0","method":"m"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message must be one JSON-RPC object; batches are not supported"}}`},
		{"member of the wrong type", `{"jsonrpc":"2.0","id":9,"method":5}`, `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Invalid Request: method must be a string, got number"}}`},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{},"method":"m"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or a number"}}`},
		{"wrong version", `{"jsonrpc":"1.0","id":"v","method":"m"}`, `{"jsonrpc":"2.0","id":"v","error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}`},
		{"neither call nor response", `{"jsonrpc":"2.0","id":3}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: neither a call (method) nor a response (result or error)"}}`},
		{"not UTF-8, a notification", "{\"jsonrpc\":\"2.0\",\"method\":\"diff/accepted\",\"params\":{\"content\":\"caf\xe9\"}}", `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params for diff/accepted: the text is not valid UTF-8 (first bad byte 0xE9 at byte offset 66); send file content as UTF-8"}}`},
		{"lone surrogate", `{"jsonrpc":"2.0","id":5,"method":"m","params":"a\ud800"}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params for m: the text holds a lone UTF-16 surrogate escape \\uD800 at byte offset 48, which is not a character; send file content as valid Unicode"}}`},
		{"too long", `{"jsonrpc":"2.0","id":6,"method":"m","params":"` + strings.Repeat("a", 300) + `"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: %s"}}`},
	}
	tooLong := map[string]string{"lines": "line longer than 256 bytes", "headers": "message of 349 bytes is over the limit of 256 bytes"}
	for name, f := range map[string]Framer{"lines": LineFramer(), "headers": HeaderFramer()} {
		e := newEnd(t, Options{Framer: f, MaxMessage: 256}, &echo{})
		for _, tt := range tests {
			want := tt.want
			if tt.name == "too long" {
				want = fmt.Sprintf(want, tooLong[name])
			}
			e.send(tt.send)
			if got := e.next(); got != want {
				t.Errorf("%s, %s: answered\n%s, want\n%s", name, tt.name, got, want)
			}
		}
		// Reading goes on.
		e.send(`{"jsonrpc":"2.0","id":7,"method":"m"}`)
		if got := e.next(); got != `{"jsonrpc":"2.0","id":7,"result":{"method":"m","params":null}}` {
			t.Errorf("%s: after the malformed messages: %s", name, got)
		}
	}
}

// TestWording: a protocol words the answers to malformed messages its
// own way.
func TestWording(t *testing.T) {
	e := newEnd(t, Options{Framer: HeaderFramer(), Wording: Wording{
		NotObject: func(bool) string { return "Invalid Request: one object" },
		BadText:   func(_ string, err error) string { return "Invalid params: " + err.Error() },
		BadMember: func(err error) string { return "Invalid Request: " + err.Error() },
	}}, &echo{})
	for _, tt := range []struct{ send, want string }{
		{`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: one object"}}`},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"\xe9\"}", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: the text is not valid UTF-8 (first bad byte 0xE9 at byte offset 47); send file content as UTF-8"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":5}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: json: cannot unmarshal number into Go struct field message.method of type string"}}`},
	} {
		e.send(tt.send)
		if got := e.next(); got != tt.want {
			t.Errorf("%q answered\n%s, want\n%s", tt.send, got, tt.want)
		}
	}
}

// TestSend: a message passed on goes out as it is, framed.
func TestSend(t *testing.T) {
	e := newEnd(t, Options{Framer: HeaderFramer()}, &echo{})
	if err := e.conn.Send(json.RawMessage(`{"jsonrpc":"2.0","id":"c1","result":null}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.next(); got != `{"jsonrpc":"2.0","id":"c1","result":null}` {
		t.Fatalf("sent %s", got)
	}
	b, err := json.Marshal(&Request{ID: json.RawMessage(`"c2"`), Method: "m", Params: json.RawMessage(`[1]`)})
	if err != nil || string(b) != `{"jsonrpc":"2.0","id":"c2","method":"m","params":[1]}` {
		t.Fatalf("a request passed on: %s %v", b, err)
	}
	if b, _ := json.Marshal(&Request{Method: "n"}); string(b) != `{"jsonrpc":"2.0","method":"n"}` {
		t.Fatalf("a notification passed on: %s", b)
	}
}

type discard struct{}

func (discard) Handle(context.Context, Request) (any, error) { return nil, ErrNoReply }

// BenchmarkHandleLarge is the reading of one message as large as a
// language server's answer of a thousand locations (about 200 KB): what
// gemkit spends on it beyond the framing.
func BenchmarkHandleLarge(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","method":"m","params":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"uri":"file:///home/u/src/shop/pkg%02d/file%d.go","range":{"start":{"line":%d,"character":12},"end":{"line":%d,"character":17}}}`, i/50, i%5, i, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	c := NewConn(strings.NewReader(""), io.Discard, Options{Logger: slog.New(slog.DiscardHandler)})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		c.handle(context.Background(), body, discard{})
	}
}
