// Package mcpclient is gemkit's client of MCP servers: the ACP agent's
// servers (internal/acp), the IDE client's companion (client) and the
// tests that talk to a server as a client does. It runs on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk), which stays inside this
// package, as internal/mcpserver keeps the SDK's server side.
//
// On stdio with a server whose stdout it can close, the client reads with
// a transport of its own (stdioconn.go), and makes tool calls on it
// without the SDK: the SDK's way cost a proxied call as much as the
// server's own answer.
//
// One thing the SDK does not do is taken care of here: it refuses every
// notification whose method it does not know before any handler sees it
// (go-sdk#745), and the IDE companion speaks in such notifications
// (ide/contextUpdate, ide/diffAccepted, …). So a client with a Notify
// reads them off the wire before the SDK does: from the server's stdout
// on stdio, from the event streams of the responses on Streamable HTTP.
package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/mcpwire"
	"github.com/gemkit/gemkit/internal/pipeio"
)

// Options say who the client is and what it does with notifications.
type Options struct {
	// Name and Version are the client's clientInfo.
	Name, Version string
	// ProtocolVersion is the revision the client asks for; "" is the
	// newest the SDK speaks (2026-07-28, falling back to initialize with
	// 2025-11-25 when the server has no server/discover).
	ProtocolVersion string
	// Notify, when set, receives every notification the server sends,
	// its method and params, in the order they arrive; those of methods
	// the SDK does not know go to Notify only.
	Notify func(method string, params json.RawMessage)
	// Logger receives the SDK's log; nil discards it.
	Logger *slog.Logger
	// Progress, when set, receives the server's progress notifications:
	// the token the call was given (CallToolRaw), the progress, the
	// total (0: unknown) and the message. On stdio each comes in the
	// order the server wrote it, before the answer it wrote next; from
	// the SDK (HTTP, a stdout that cannot be closed) one may come after
	// the answer, from a goroutine of the SDK's.
	Progress func(token any, progress, total float64, message string)
	// Events, when set, receives the server's log (LogMessage), its
	// list-changed notifications and notifications/resources/updated,
	// their params as the SDK decoded and encodes them again. On the
	// revisions from 2026-07-28 on, the SDK opens the stream they come
	// on for the lists the server says change.
	Events func(method string, params json.RawMessage)
	// Roots, when not nil, are the roots the client declares and
	// answers roots/list with (elicit.go); nil declares roots that may
	// change, and answers with none.
	Roots []Root
	// Ask, when set, answers each question the server asks (elicit.go):
	// under the context of the request the question came with where the
	// server asked in its result (2026-07-28 on), else of the server's
	// own request. An error refuses the question, in its words. The
	// client declares elicitation in the modes AskForm and AskURL say;
	// with neither, it declares none, and Ask still has the say over a
	// question a server asks regardless.
	Ask             func(ctx context.Context, q Question) (Answer, error)
	AskForm, AskURL bool
}

// Client is a connected session with one MCP server. It is safe for
// concurrent use.
type Client struct {
	cs *mcp.ClientSession
	// bound, on stdio, is the reader that refuses an overlong message.
	bound *boundedReader
	// direct, on stdio with a stdout gemkit can close, makes tool calls
	// without the SDK (stdioConn.call).
	direct *stdioConn // set where tool calls may go directly (directOK)
	// ended is closed once the session ended, by Close or by the server.
	ended chan struct{}
	// life ends with Abort (end), and every request with it (request).
	life context.Context
	end  context.CancelFunc
}

// Tool is one tool the server lists.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the tool's input schema as the server sent it.
	InputSchema json.RawMessage
	// Title, OutputSchema and Annotations are as the server sent them
	// ("", nil when it sent none).
	Title        string
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
}

// Result is the result of a tool call.
type Result struct {
	// Texts are the text parts of the content, in order.
	Texts []string
	// Structured is the structuredContent, or nil.
	Structured json.RawMessage
	IsError    bool
}

// Text is the text parts joined by sep.
func (r *Result) Text(sep string) string { return strings.Join(r.Texts, sep) }

// Stdio connects over a server's stdout (out) and stdin (in), newline
// delimited JSON-RPC: the caller starts the process and ends it after
// Close, which closes in.
//
// A message longer than MaxMessage ends the session
// (ErrMessageTooLarge): the server is not trusted to bound what it
// prints, and a line that never ends would otherwise be held in memory
// until gemkit's own runs out.
func Stdio(ctx context.Context, out io.Reader, in io.WriteCloser, o Options) (*Client, error) {
	// A pipe in non-blocking mode (os.Pipe's, as the sandbox gives a
	// server's stdout) is read with pipeio's raw system calls.
	bound := &boundedReader{r: pipeio.Reader(out), max: MaxMessage}
	var t mcp.Transport
	if closer, ok := out.(io.Closer); ok {
		t = &stdioTransport{out: bufio.NewReaderSize(bound, 64<<10), closer: closer, in: in, notify: o.Notify, progress: o.Progress}
	} else {
		// A stdout that cannot be closed may block a read the session's
		// close must end: the SDK's transport reads it in a goroutine of
		// its own.
		r := io.NopCloser(bound)
		if o.Notify != nil {
			r = &notifyingReader{src: bufio.NewReaderSize(bound, 64<<10), notify: o.Notify}
		}
		// The SDK's own bound, counted its own way (with its read-ahead),
		// is set above ours, so that ours, which the Client can name,
		// trips first.
		t = &mcp.IOTransport{Reader: r, Writer: in, MaxLineLength: 2 * MaxMessage}
	}
	c, err := connect(ctx, t, o)
	if err != nil {
		if bound.over.Load() {
			return nil, fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
		}
		return nil, err
	}
	c.bound = bound
	if st, ok := t.(*stdioTransport); ok && c.directOK() {
		c.direct = st.conn
	}
	return c, nil
}

// MaxMessage bounds one message a server sends on stdio: mcpwire's
// bound, the SDK's own default, more than any tool result a model can
// take.
const MaxMessage = mcpwire.MaxMessage

// ErrMessageTooLarge is why a stdio session ended when the server sent
// a message over MaxMessage.
var ErrMessageTooLarge = fmt.Errorf("the server sent a message over %d MiB", MaxMessage>>20)

// Refusal is the message of the JSON-RPC error the server answered with,
// when err carries one (a server that refuses initialize says there why).
func Refusal(err error) (string, bool) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Message, true
	}
	return "", false
}

// MethodNotFound reports whether err carries the server's -32601
// Method not found: a method it does not have, whatever it declared.
func MethodNotFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

// boundedReader passes on a server's stdout and fails once a line (one
// message) runs over max bytes.
type boundedReader struct {
	r    io.Reader
	max  int
	line int
	over atomic.Bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.over.Load() {
		return 0, ErrMessageTooLarge
	}
	n, err := b.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			b.line = 0
			continue
		}
		if b.line++; b.line > b.max {
			b.over.Store(true)
			return i, ErrMessageTooLarge
		}
	}
	return n, err
}

// Ended reports whether the session has ended, and if so why: nil when
// it is still up, ErrMessageTooLarge after an overlong message, else the
// error the session ended with (io.EOF or mcp's "connection closed"
// when it simply closed).
func (c *Client) Ended() (bool, error) {
	// An overlong message ends the session: it is over before the SDK
	// has wound it up.
	if c.bound != nil && c.bound.over.Load() {
		return true, ErrMessageTooLarge
	}
	select {
	case <-c.ended:
	default:
		return false, nil
	}
	err := c.cs.Wait()
	if err == nil {
		err = mcp.ErrConnectionClosed
	}
	return true, err
}

// HTTP connects to a Streamable HTTP endpoint through hc (nil is a client
// of its own), sending header with every request. The SDK opens the
// server's GET stream after connecting, and reopens it when it ends.
func HTTP(ctx context.Context, url string, hc *http.Client, header http.Header, o Options) (*Client, error) {
	return connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: withHeader(hc, header, o.Notify)}, o)
}

func connect(ctx context.Context, t mcp.Transport, o Options) (*Client, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := &mcp.ClientOptions{Logger: log}
	if o.Progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			o.Progress(p.ProgressToken, p.Progress, p.Total, p.Message)
		}
	}
	if o.Events != nil {
		events(opts, o.Events)
	}
	clientCapabilities(opts, o)
	c := mcp.NewClient(&mcp.Implementation{Name: o.Name, Version: o.Version}, opts)
	addRoots(c, o)
	undeclared(c, o)
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion})
	if err != nil {
		return nil, err
	}
	ended := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(ended)
	}()
	life, end := context.WithCancel(context.Background())
	return &Client{cs: cs, ended: ended, life: life, end: end}, nil
}

// request is ctx for one of c's requests, ended by Abort as well: the
// SDK's Close waits for the requests under way to be answered, which a
// server being stopped need never do (a listing it holds, a call of a
// tool that hangs), and gemkit mcp's end waited for each up to its own
// bound.
func (c *Client) request(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// Instructions are the server's instructions.
func (c *Client) Instructions() string {
	if r := c.cs.InitializeResult(); r != nil {
		return r.Instructions
	}
	return ""
}

// Server is the server's name and version and the negotiated revision.
func (c *Client) Server() (name, version, protocolVersion string) {
	r := c.cs.InitializeResult()
	if r == nil {
		return "", "", ""
	}
	if r.ServerInfo != nil {
		name, version = r.ServerInfo.Name, r.ServerInfo.Version
	}
	return name, version, r.ProtocolVersion
}

// SessionID is the Streamable HTTP session's id, "" on stdio.
func (c *Client) SessionID() string { return c.cs.ID() }

// ListTools lists every tool, page after page.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	ctx, done := c.request(ctx)
	defer done()
	var out []Tool
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: its input schema: %w", t.Name, err)
		}
		tool := Tool{Name: t.Name, Description: t.Description, InputSchema: schema, Title: t.Title}
		if t.OutputSchema != nil {
			if tool.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
				return nil, fmt.Errorf("tool %q: its output schema: %w", t.Name, err)
			}
		}
		if t.Annotations != nil {
			if tool.Annotations, err = json.Marshal(t.Annotations); err != nil {
				return nil, fmt.Errorf("tool %q: its annotations: %w", t.Name, err)
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// CallTool calls the tool name with args (anything that encodes as a JSON
// object, or nil). A tool that failed is a Result with IsError; an error
// is the call's own failure.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*Result, error) {
	ctx, done := c.request(ctx)
	defer done()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	out := &Result{IsError: res.IsError}
	for _, part := range res.Content {
		if t, ok := part.(*mcp.TextContent); ok {
			out.Texts = append(out.Texts, t.Text)
		}
	}
	if res.StructuredContent != nil {
		if out.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, fmt.Errorf("tool %q: its structured content: %w", name, err)
		}
	}
	return out, nil
}

// CallToolRaw calls the tool name with args (a JSON object, or nil) and
// returns the server's result as it encoded it, whatever its content (but
// its resultType, which is the hop's: result): a proxy passes it on as
// it is. A progressToken other than nil asks the
// server for progress (Options.Progress receives it).
func (c *Client) CallToolRaw(ctx context.Context, name string, args json.RawMessage, progressToken any) (json.RawMessage, error) {
	ctx, done := c.request(ctx)
	defer done()
	var a any
	if len(args) > 0 {
		a = args
	}
	params := &mcp.CallToolParams{Name: name, Arguments: a}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	if c.direct != nil {
		raw, err := c.direct.call(ctx, "tools/call", params)
		if err != nil {
			return nil, err
		}
		return directResult(raw)
	}
	res, err := c.cs.CallTool(ctx, params)
	if err != nil {
		return nil, err
	}
	return result(res)
}

// result encodes a result a proxy passes on, without what belongs to the
// hop from the server to this client rather than to the result: the
// resultType of the revisions from 2026-07-28 on, which the proxy's own
// server sets as its client's revision asks.
func result(res any) (json.RawMessage, error) {
	raw, err := json.Marshal(res)
	if err != nil || !bytes.Contains(raw, []byte(`"resultType"`)) {
		return raw, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	delete(fields, "resultType")
	return json.Marshal(fields)
}

// Close ends the session (on Streamable HTTP with a DELETE), once the
// requests under way are answered (the SDK's Close waits for them).
func (c *Client) Close() error {
	err := c.cs.Close()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

// Abort ends the requests under way (request), then the session: for a
// server being stopped, which need never answer them.
func (c *Client) Abort() error {
	c.end()
	return c.Close()
}

// Wait waits for the session to end, by Close or by the server.
func (c *Client) Wait() error { return c.cs.Wait() }

// standard reports whether the SDK takes a notification of method.
func standard(method string) bool { return strings.HasPrefix(method, "notifications/") }

// notification returns a message's method and params when it is a
// notification, its members read by their exact names (mcpwire.Read),
// as decodeMessage reads them.
func notification(data []byte) (method string, params json.RawMessage, ok bool) {
	if !bytes.Contains(data, []byte(`"method"`)) {
		return "", nil, false
	}
	m, err := mcpwire.Read(data)
	if err != nil || !m.HasMethod || m.HasID() {
		return "", nil, false
	}
	return m.Method, m.Params, m.Method != ""
}

// notifyingReader passes a server's stdout on to the SDK line by line,
// handing each notification to notify, and keeping back those the SDK
// does not know.
type notifyingReader struct {
	src     *bufio.Reader
	notify  func(method string, params json.RawMessage)
	pending []byte
	err     error
}

func (r *notifyingReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := r.src.ReadBytes('\n')
		r.err = err
		if method, params, ok := notification(line); ok {
			r.notify(method, params)
			if !standard(method) {
				continue
			}
		}
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *notifyingReader) Close() error { return nil }

// roundTripper adds the headers to every request and reads the
// notifications out of every event stream it gets back.
type roundTripper struct {
	base   http.RoundTripper
	header http.Header
	notify func(method string, params json.RawMessage)
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.header {
			req.Header[k] = v
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || t.notify == nil {
		return resp, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &eventReader{ReadCloser: resp.Body, notify: t.notify}
	}
	return resp, nil
}

// eventReader passes an event stream on unchanged, handing each
// notification in it to notify as its event ends. The SDK sees the same
// bytes; it refuses the notifications it does not know with a line in its
// log, and goes on. An event over mcpwire.MaxEvent, which the SDK refuses
// too, is not kept, nor handed on.
type eventReader struct {
	io.ReadCloser
	notify func(method string, params json.RawMessage)
	line   []byte // the line being read
	data   []byte // the event's data so far
	over   bool   // the event ran over mcpwire.MaxEvent
}

func (e *eventReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			if len(e.line)+len(e.data) < mcpwire.MaxEvent {
				e.line = append(e.line, b)
			} else {
				e.over = true
			}
			continue
		}
		e.endLine()
	}
	return n, err
}

// endLine takes one line of the stream (RFC: text/event-stream, as the
// WHATWG HTML standard defines it): "data:" lines add to the event, an
// empty line ends it.
func (e *eventReader) endLine() {
	line := bytes.TrimSuffix(e.line, []byte("\r"))
	e.line = e.line[:0]
	if len(line) == 0 {
		if method, params, ok := notification(e.data); ok && !e.over {
			e.notify(method, params)
		}
		e.data, e.over = e.data[:0], false
		return
	}
	if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		if len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, bytes.TrimPrefix(v, []byte(" "))...)
	}
}
