package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultMaxMessage bounds a message read when Options leaves it zero:
// room for a diff's content at the companion's request-body limit
// (ide.MaxRequestBody, 10 MiB), escaped. It is written out rather than
// derived so that this package depends on no protocol above it; a test in
// ide holds the two together.
const DefaultMaxMessage = 40 << 20

// ErrClosed is returned by calls once the peer's stream has ended, unless
// Options.ErrClosed says it in the protocol's words.
var ErrClosed = errors.New("connection closed")

// ErrNoReply is returned by a Handler for a request it does not answer
// through its return values: it answers with Conn.Reply itself, now or
// later, or another peer answers it (a message passed on).
var ErrNoReply = errors.New("jsonrpc: no reply from the handler")

// A Handler takes the peer's requests and notifications. Handle runs in
// Run's reading goroutine, one message at a time and in the order they
// came: a handler that would block hands the work to a goroutine and
// returns ErrNoReply. For a request, the result (nil is sent as null) or
// the error is the answer: an *Error as it is, any other error as an
// Internal error with its text. A notification has no answer: its handler
// logs what it drops. The peer's $/cancelRequest is a notification like
// any other.
type Handler interface {
	Handle(ctx context.Context, r Request) (result any, err error)
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(ctx context.Context, r Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, r Request) (any, error) { return f(ctx, r) }

// Options tune a Conn; the zero value is a line-framed connection.
type Options struct {
	// Framer delimits the messages; default LineFramer().
	Framer Framer
	// MaxMessage bounds one message read; default DefaultMaxMessage.
	MaxMessage int
	// Logger receives protocol errors, each prefixed with LogPrefix
	// ("lsp: "); default slog.Default(). It must not write to the
	// protocol's stream.
	Logger    *slog.Logger
	LogPrefix string
	// Peer is the common noun for the other end in the errors of calls:
	// "editor" gives "the editor did not answer diff/open within 30s",
	// "send diff/open to the editor: …" and "editor's answer to
	// diff/close: …"; default "peer".
	Peer string
	// ErrorPrefix starts the text of an error the peer answers a call
	// with: "LSP" gives "LSP error -32601: Method not found"; default
	// Peer.
	ErrorPrefix string
	// ErrClosed is returned by calls once the stream has ended; default
	// ErrClosed.
	ErrClosed error
	// CancelMethod, when set, is notified with {"id": n} when a call is
	// given up (its context ended, or its timeout passed) before its
	// answer: "$/cancelRequest" in LSP. The peer's late answer is then
	// dropped quietly. The stdio editor protocol has none.
	CancelMethod string
	// Wording words the answers to malformed messages where protocols
	// differ.
	Wording Wording
}

// Wording is how a protocol words its answers to malformed messages. A
// nil field has the default its comment shows; what both protocols say
// alike ("Parse error: …", "Invalid Request: id must be a string or a
// number", …) is not here.
type Wording struct {
	// NotObject answers valid JSON that is not one object; batch when it
	// is an array. Default "Invalid Request: a message must be one
	// JSON-RPC object", and "; batches are not supported" for an array.
	NotObject func(batch bool) string
	// BadText answers a message that is not valid Unicode text (an
	// Invalid params error); method is "" when it could not be read.
	// Default "Invalid params for <method, or the message>: <err>".
	BadText func(method string, err error) string
	// BadMember answers an object with a member of the wrong type.
	// Default "Invalid Request: " and Problem's words, e.g. "method must
	// be a string, got number".
	BadMember func(err error) string
}

func (w Wording) notObject(batch bool) string {
	if w.NotObject != nil {
		return w.NotObject(batch)
	}
	msg := "Invalid Request: a message must be one JSON-RPC object"
	if batch {
		msg += "; batches are not supported"
	}
	return msg
}

func (w Wording) badText(method string, err error) string {
	if w.BadText != nil {
		return w.BadText(method, err)
	}
	if method == "" {
		method = "the message"
	}
	return fmt.Sprintf("Invalid params for %s: %v", method, err)
}

func (w Wording) badMember(err error) string {
	if w.BadMember != nil {
		return w.BadMember(err)
	}
	return "Invalid Request: " + Problem(err)
}

// Conn is one JSON-RPC peer on a pair of streams: it calls the peer,
// notifies it and answers it, and passes the peer's calls to a Handler
// (Run). Its methods are safe for concurrent use; each message is written
// whole, with one Write.
type Conn struct {
	r io.Reader
	w io.Writer
	o Options

	wmu     sync.Mutex
	pending *pending

	stopOnce sync.Once
	stop     chan struct{}
	stopErr  error
	done     chan struct{}
}

// NewConn makes a Conn reading the peer's messages from r and writing
// its own to w. Call Run to read.
func NewConn(r io.Reader, w io.Writer, o Options) *Conn {
	if o.Framer == nil {
		o.Framer = LineFramer()
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Peer == "" {
		o.Peer = "peer"
	}
	if o.ErrorPrefix == "" {
		o.ErrorPrefix = o.Peer
	}
	if o.ErrClosed == nil {
		o.ErrClosed = ErrClosed
	}
	return &Conn{r: r, w: w, o: o, pending: newPending(), stop: make(chan struct{}), done: make(chan struct{})}
}

// Done is closed when Run has returned: the peer is gone.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Run reads the peer's messages, answers the peer's responses to the
// calls waiting for them and passes its requests and notifications to h,
// until the stream ends, ctx ends (then Run returns nil) or Stop is
// called (then Run returns Stop's error). At the end of the stream it
// returns io.EOF, or io.ErrUnexpectedEOF when the stream ended inside a
// message. A malformed message is answered with a JSON-RPC error (only
// logged when it cannot be answered) and reading goes on. A read cannot
// be interrupted: Run returns without it, and once Run has returned no
// further message reaches h, except one whose handling had begun. The
// calls still waiting then fail with Options.ErrClosed. Run is called
// once.
func (c *Conn) Run(ctx context.Context, h Handler) error {
	defer c.close()
	readErr := make(chan error, 1)
	go func() { readErr <- c.read(ctx, h) }()
	select {
	case <-ctx.Done():
		return nil
	case <-c.stop:
		return c.stopErr
	case err := <-readErr:
		return err
	}
}

// Stop ends Run, which returns err, once the message being handled is
// done; no message after it is handled. LSP's exit notification stops
// its server this way. Only the first Stop counts.
func (c *Conn) Stop(err error) {
	c.stopOnce.Do(func() {
		c.stopErr = err
		close(c.stop)
	})
}

// close fails every call still waiting: the peer is gone.
func (c *Conn) close() {
	if c.pending.close() {
		close(c.done)
	}
}

func (c *Conn) read(ctx context.Context, h Handler) error {
	fr := c.o.Framer.NewReader(c.r, c.o.MaxMessage)
	for {
		body, err := fr.Next()
		select {
		case <-c.done:
			return nil // Run has returned
		default:
		}
		if err == nil {
			c.handle(ctx, body, h)
			select {
			case <-c.stop:
				return c.stopErr
			default:
			}
			continue
		}
		var fe *FrameError // declared here: errors.As moves it to the heap
		switch {
		case errors.As(err, &fe):
			c.o.Logger.Error(c.o.LogPrefix + fe.Msg)
			if fe.Answer != nil {
				c.Reply(nil, nil, fe.Answer)
			}
		case errors.Is(err, io.EOF):
			return io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return io.ErrUnexpectedEOF
		default:
			return fmt.Errorf("read: %w", err)
		}
	}
}

// handle checks one message and dispatches it. A request or response
// (an object) is decoded once: by quickMessage, in one pass, as peers
// write them, else by json.Unmarshal, which checks the whole text before
// it fills anything in, so that its syntax error is the parse error
// json.Valid would find.
func (c *Conn) handle(ctx context.Context, body []byte, h Handler) {
	body = bytes.TrimSpace(body)
	var m message
	var memberErr error
	switch {
	case len(body) > 0 && body[0] == '{' && quickMessage(body, &m):
	case len(body) > 0 && body[0] == '{':
		m = message{}
		if err := json.Unmarshal(body, &m); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				c.refuse(nil, CodeParseError, "Parse error: "+Problem(err), "")
				return
			}
			// Valid JSON with a member of the wrong type; Unmarshal
			// still filled in the rest, the id included when it could.
			memberErr = err
		}
	case !json.Valid(body):
		err := json.Unmarshal(body, new(any)) // for the position of the mistake
		c.refuse(nil, CodeParseError, "Parse error: "+Problem(err), "")
		return
	}
	if err := CheckJSONText(body); err != nil {
		// encoding/json would turn the bad text into U+FFFD and an
		// accepted diff would reach the CLI changed. Refused whether the
		// message is a request or a notification: silence would lose it.
		c.refuse(validID(m.ID), CodeInvalidParams, c.o.Wording.badText(m.Method, err), m.Method)
		return
	}
	if body[0] != '{' {
		c.refuse(nil, CodeInvalidRequest, c.o.Wording.notObject(body[0] == '['), "")
		return
	}
	if memberErr != nil {
		c.refuse(validID(m.ID), CodeInvalidRequest, c.o.Wording.badMember(memberErr), "")
		return
	}
	id := m.ID
	if bytes.Equal(id, []byte("null")) {
		id = nil
	}
	if id != nil && validID(id) == nil {
		c.refuse(nil, CodeInvalidRequest, "Invalid Request: id must be a string or a number", "")
		return
	}
	if m.JSONRPC != "2.0" {
		c.refuse(id, CodeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`, "")
		return
	}
	switch {
	case m.Method != "":
		result, err := h.Handle(ctx, Request{ID: id, Method: m.Method, Params: m.Params})
		if id != nil && !errors.Is(err, ErrNoReply) {
			c.Reply(id, result, err)
		}
	case id != nil && (m.Result != nil || m.Error != nil):
		if n, delivered, expected := c.pending.deliver(id, m); !delivered && !expected {
			c.o.Logger.Warn(c.o.LogPrefix+"response to no pending request (late, unknown or never used)", "id", n)
		}
	default:
		c.refuse(id, CodeInvalidRequest, "Invalid Request: neither a call (method) nor a response (result or error)", "")
	}
}

// refuse logs a malformed message and answers it (id nil is sent as
// null).
func (c *Conn) refuse(id json.RawMessage, code int, msg, method string) {
	if method != "" {
		c.o.Logger.Error(c.o.LogPrefix+msg, "method", method)
	} else {
		c.o.Logger.Error(c.o.LogPrefix + msg)
	}
	c.Reply(id, nil, &Error{Code: code, Message: msg})
}

// Reply answers the request id (nil is sent as null) with result, or
// with err when it is not nil: an *Error as it is, any other error as an
// Internal error with its text. A json.RawMessage result (a peer's
// answer passed on) is written as it is, after plainValue's cheap check,
// not checked and compacted once more by json.Marshal. A failed write is
// logged, and returned.
func (c *Conn) Reply(id json.RawMessage, result any, err error) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := responseMessage{JSONRPC: "2.0", ID: id}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		out.Error = e // nil for a nil *Error: a success
	}
	if out.Error == nil {
		if result == nil {
			result = json.RawMessage("null") // a result member is required
		}
		out.Result = result
	}
	var werr error
	if raw, ok := out.Result.(json.RawMessage); ok && out.Error == nil && plainID(id) && plainValue(raw) {
		werr = c.writeRaw(id, raw)
	} else {
		werr = c.write(out)
	}
	if werr != nil {
		c.o.Logger.Error(c.o.LogPrefix+"write response", "err", werr)
		return werr
	}
	return nil
}

// Notify sends a notification to the peer.
func (c *Conn) Notify(method string, params any) error {
	return c.write(notificationMessage{"2.0", method, params})
}

// Call sends a request to the peer and waits for its answer, at most
// timeout (none when 0) or until ctx ends, and decodes its result into
// result (which may be nil). An error answer is returned as an *Error.
// A call given up is cancelled with Options.CancelMethod, when set.
func (c *Conn) Call(ctx context.Context, timeout time.Duration, method string, params, result any) error {
	id, ch, ok := c.pending.add()
	if !ok {
		return c.o.ErrClosed
	}
	if err := c.write(callMessage{"2.0", id, method, params}); err != nil {
		c.pending.forget(id, false)
		return fmt.Errorf("send %s to the %s: %w", method, c.o.Peer, err)
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var m message
	select {
	case m, ok = <-ch:
		if !ok {
			return c.o.ErrClosed
		}
	case <-expired:
		c.cancel(id)
		return fmt.Errorf("the %s did not answer %s within %v", c.o.Peer, method, timeout)
	case <-ctx.Done():
		c.cancel(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
	if m.Error != nil {
		m.Error.from = c.o.ErrorPrefix
		return m.Error
	}
	switch result := result.(type) {
	case nil:
	case *json.RawMessage:
		// Checked already, and a copy of its own: a language server's
		// answer of 200 KB is not scanned once more.
		*result = m.Result
	case json.Unmarshaler:
		// What json.Unmarshal does with a valid text, without checking
		// it once more: a result that reads itself (lsp/request's,
		// which carries the servers' answers as they came) takes the
		// text as read.
		if err := result.UnmarshalJSON(m.Result); err != nil {
			return fmt.Errorf("%s's answer to %s: %w", c.o.Peer, method, err)
		}
	default:
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s's answer to %s: %w", c.o.Peer, method, err)
		}
	}
	return nil
}

// cancel gives up the call id, telling the peer where the protocol can.
func (c *Conn) cancel(id int64) {
	tell := c.o.CancelMethod != ""
	if c.pending.forget(id, tell) && tell {
		if err := c.Notify(c.o.CancelMethod, map[string]int64{"id": id}); err != nil {
			c.o.Logger.Debug(c.o.LogPrefix+"write "+c.o.CancelMethod, "err", err)
		}
	}
}

// Send writes msg, one message already encoded, as it is: a message
// passed on from another peer.
func (c *Conn) Send(msg json.RawMessage) error {
	b := c.o.Framer.Frame(slices.Clip(msg))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

// writeRaw sends the answer to id whose result is raw, written as it is
// (plainValue): json.Marshal would check and compact it once more, which
// for a language server's answer passed on (150 KB) is a millisecond.
func (c *Conn) writeRaw(id, raw json.RawMessage) error {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(raw)+2) // and the line framing's "\n"
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, raw...)
	b = c.o.Framer.Frame(append(b, '}'))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

// plainValue is the cheap check of a result written as it is: it starts
// as a JSON value does and holds no line break, which would end a line-
// framed message early (json.Marshal compacts one between tokens away).
// Its text is a value read from a peer and checked then, or gemkit's own.
func plainValue(raw json.RawMessage) bool {
	if len(raw) == 0 || bytes.IndexByte(raw, '\n') >= 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '{', c == '[', c == '"', c == 't', c == 'f', c == 'n', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// plainID reports whether json.Marshal would write id as it is: an id as
// validID passes it with nothing HTML-escaped, nothing over ASCII.
func plainID(id json.RawMessage) bool {
	for _, c := range id {
		if c == '<' || c == '>' || c == '&' || c < 0x20 || c > 0x7E {
			return false
		}
	}
	return len(id) > 0
}

// write sends v as one framed message.
func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = c.o.Framer.Frame(b)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}
