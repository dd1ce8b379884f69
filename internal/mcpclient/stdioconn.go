package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/mcpwire"
	"github.com/gemkit/gemkit/internal/pipeio"
)

// stdioTransport is MCP's stdio transport (newline-delimited JSON-RPC)
// over a server's stdout and stdin that gemkit holds and can close. The
// SDK's own (mcp.IOTransport) hands each message from a reading
// goroutine of its own to the session's, and decodes it two or three
// times, each time through a fresh 32 KiB buffer (go-sdk v1.8.0's
// internal JSON decoder): at each call of a proxied tool that was most
// of what gemkit's process allocated, and its collector much of what the
// call cost. This one reads in the session's own reading goroutine and
// decodes each message once, with encoding/json. Closing the connection
// closes the server's stdout, which ends a read under way.
type stdioTransport struct {
	out    *bufio.Reader
	closer io.Closer // the server's stdout
	in     io.WriteCloser
	notify func(method string, params json.RawMessage)
	// progress receives the server's progress notifications in the
	// reading goroutine, in the order the server wrote them, so that each
	// is handed on before the answer written after it (Options.Progress).
	progress func(token any, progress, total float64, message string)
	conn     *stdioConn // the connection made, for its direct calls
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	// A pipe in non-blocking mode (os.Pipe's, as the sandbox gives a
	// server's stdin) is written with pipeio's raw system calls.
	raw, _ := t.in.(*pipeio.File)
	if f, ok := t.in.(*os.File); ok {
		if p, ok := pipeio.New(f); ok {
			t.in, raw = p, p
		}
	}
	t.conn = &stdioConn{t: t, calls: map[string]answerFunc{}, raw: raw}
	return t.conn, nil
}

type stdioConn struct {
	t       *stdioTransport
	pending []jsonrpc.Message // the rest of a batch
	wmu     sync.Mutex
	// raw is the server's stdin when it is a descriptor in non-blocking
	// mode, which send writes without blocking (pipeio's TryWrite).
	raw  *pipeio.File
	once sync.Once
	cerr error

	// The calls made directly (call, forward), by the id they went
	// with.
	cmu    sync.Mutex
	calls  map[string]answerFunc
	nextID int64
	ended  error // why reading ended; no call is taken after it
}

// answerFunc receives the answer to a direct call, in the goroutine
// that reads the server's stdout: its result as the server wrote it
// (a copy of its own), or its error (a *jsonrpc.Error the server
// answered, or why reading ended). It must not block.
type answerFunc func(result json.RawMessage, err error)

// directAnswer is the answer to a direct call: its result, or its error.
type directAnswer struct {
	result json.RawMessage
	err    error
}

func (c *stdioConn) SessionID() string { return "" }

// Read returns the server's next message. Lines that hold only space
// are skipped, as the SDK skips them; a notification goes to notify
// first, and one the SDK does not know to notify only.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.pending) > 0 {
			m := c.pending[0]
			c.pending = c.pending[1:]
			return m, nil
		}
		line, err := c.t.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long message: what was read (copied out of the buffer,
			// which the next read reuses), then the rest of it.
			head := append([]byte(nil), line...)
			var rest []byte
			rest, err = c.t.out.ReadBytes('\n')
			line = append(head, rest...)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				c.endCalls(err)
				return nil, err
			}
			continue
		}
		// The answer of a direct call goes to its caller without the
		// SDK's types: read once, its result as the server wrote it.
		if c.answerLine(line) {
			if err != nil {
				c.endCalls(err)
				return nil, err
			}
			continue
		}
		msgs, derr := decodeLine(line)
		if derr != nil {
			c.endCalls(derr)
			return nil, derr
		}
		for _, m := range msgs {
			if r, ok := m.(*jsonrpc.Response); ok && c.answer(r) {
				continue
			}
			if r, ok := m.(*jsonrpc.Request); ok && !r.ID.IsValid() && c.t.notify != nil {
				c.t.notify(r.Method, r.Params)
				if !standard(r.Method) {
					continue
				}
			}
			if r, ok := m.(*jsonrpc.Request); ok && !r.ID.IsValid() && r.Method == "notifications/progress" && c.t.progress != nil {
				// Here, not in the SDK, which hands a notification on from
				// a goroutine of its own: a direct call's answer, handed
				// over below, would overtake it.
				progressTo(c.t.progress, r.Params)
				continue
			}
			c.pending = append(c.pending, m)
		}
		if len(c.pending) == 0 && err != nil {
			c.endCalls(err)
			return nil, err
		}
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.t.in.Write(data)
	return err
}

func (c *stdioConn) Close() error {
	c.once.Do(func() {
		// Either may have been closed already: the stdout by whoever
		// waited for the server's exit (exec.Cmd.Wait), the stdin by
		// whoever asked the server to end.
		c.cerr = errors.Join(closed(c.t.in.Close()), closed(c.t.closer.Close()))
	})
	return c.cerr
}

// directPrefix begins the ids of direct calls: the SDK's own are
// numbers, so the two never meet.
const directPrefix = "gemkit-direct-"

// call sends a request of method with params and waits for its answer,
// which Read hands over without the SDK: the SDK's way for a request
// (its own goroutines, the answer decoded through a fresh 32 KiB buffer
// and then into a typed result) cost a proxied tool call as much as the
// server's own answer. A cancelled ctx sends notifications/cancelled,
// as the SDK does. Once reading has ended no call is made.
func (c *stdioConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan directAnswer, 1)
	key, err := c.register(method, func(result json.RawMessage, err error) { ch <- directAnswer{result, err} })
	if err != nil {
		return nil, err
	}
	id, _ := jsonrpc.MakeID(key)
	err = c.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: p})
	wrote(ctx)
	if err != nil {
		c.forget(key)
		return nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("calling %q: %w", method, a.err)
		}
		return a.result, nil
	case <-ctx.Done():
		c.forget(key)
		go c.cancelled(key, ctx.Err().Error())
		return nil, ctx.Err()
	}
}

// register takes a new direct call of method, whose answer goes to
// answer, and returns the id it goes with; once reading has ended it
// fails as the call's write would.
func (c *stdioConn) register(method string, answer answerFunc) (string, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if c.ended != nil {
		return "", fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, method, c.ended)
	}
	c.nextID++
	var b [32]byte
	key := string(strconv.AppendInt(append(b[:0], directPrefix...), c.nextID, 10))
	c.calls[key] = answer
	return key, nil
}

// forget gives up the direct call key, and reports whether it was still
// waiting for its answer (which then goes nowhere).
func (c *stdioConn) forget(key string) bool {
	c.cmu.Lock()
	_, ok := c.calls[key]
	delete(c.calls, key)
	c.cmu.Unlock()
	return ok
}

// cancelled tells the server that the request key was given up, as the
// SDK tells it (MCP's notifications/cancelled).
func (c *stdioConn) cancelled(key, reason string) {
	n, _ := json.Marshal(map[string]any{"requestId": key, "reason": reason})
	_ = c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: n})
}

// answer hands r to the direct call it answers, and reports whether it
// was one's (an answer to a call given up is dropped).
func (c *stdioConn) answer(r *jsonrpc.Response) bool {
	key, ok := r.ID.Raw().(string)
	if !ok || !strings.HasPrefix(key, directPrefix) {
		return false
	}
	c.hand(key, r.Result, r.Error)
	return true
}

// hand gives the direct call key its answer, if it still waits for one.
func (c *stdioConn) hand(key string, result json.RawMessage, err error) {
	c.cmu.Lock()
	answer, ok := c.calls[key]
	delete(c.calls, key)
	c.cmu.Unlock()
	if ok {
		answer(result, err)
	}
}

// answerLine hands line to the direct call it answers when it is one
// message, an answer under a direct call's id as gemkit wrote it, and
// reports whether it did; every other line (a batch, a request, an id
// written another way) is decodeLine's, which reads it as the SDK does.
func (c *stdioConn) answerLine(line []byte) bool {
	if !bytes.Contains(line, []byte(`"`+directPrefix)) {
		return false
	}
	// In one pass where the answer has the plain shape servers write
	// (mcpwire.Scan), its result then copied out of the line, which the
	// reader reuses; else decoded.
	m, ok := mcpwire.Scan(line)
	if ok {
		m.Result = bytes.Clone(m.Result)
	} else {
		var err error
		if m, err = mcpwire.Read(line); err != nil {
			return false
		}
	}
	if m.HasMethod || m.JSONRPC != "2.0" {
		return false
	}
	id := m.ID
	if len(id) < 2+len(directPrefix) || id[0] != '"' || id[len(id)-1] != '"' ||
		!bytes.HasPrefix(id[1:], []byte(directPrefix)) || bytes.IndexByte(id, '\\') >= 0 {
		return false
	}
	var jerr error
	if len(m.Error) > 0 && string(m.Error) != "null" {
		we := &jsonrpc.Error{}
		if mcpwire.Decode(m.Error, we) != nil {
			return false // decodeLine says what is wrong with it
		}
		jerr = we
	}
	c.hand(string(id[1:len(id)-1]), m.Result, jerr)
	return true
}

// endCalls fails the direct calls under way once reading ended.
func (c *stdioConn) endCalls(why error) {
	c.cmu.Lock()
	if c.ended == nil {
		c.ended = why
	}
	calls := c.calls
	c.calls = map[string]answerFunc{}
	c.cmu.Unlock()
	for _, answer := range calls {
		answer(nil, fmt.Errorf("%w: %w", mcp.ErrConnectionClosed, why))
	}
}

// progressTo hands the progress notification of params to f; one it
// cannot read is dropped, as the SDK drops it.
func progressTo(f func(token any, progress, total float64, message string), params json.RawMessage) {
	var p struct {
		Token    any     `json:"progressToken"`
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	}
	if json.Unmarshal(params, &p) == nil && p.Token != nil {
		f(p.Token, p.Progress, p.Total, p.Message)
	}
}

// closed is err, unless it says the file was closed already.
func closed(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// decodeLine decodes one line of a server's stdout: a message, or a
// batch of them (a JSON array, which revisions before 2025-06-18
// allowed). It takes what jsonrpc.DecodeMessage takes and refuses what it
// refuses.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
		}
		if len(batch) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(batch))
		for _, raw := range batch {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// decodeMessage decodes one JSON-RPC 2.0 message: a request has a
// method (a notification also no id), a response a result or an error.
// Its members are taken by their exact names, by mcpwire's reader, as the
// SDK's decoder reads them since go-sdk#805: encoding/json would also
// match "ID" or "Method" to a struct's field, the last of them winning,
// so that a second id or method in another case would override the one
// a reader of the line sees.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	m, err := mcpwire.Read(data)
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var rawID any
	if len(m.ID) > 0 {
		if err := mcpwire.Decode(m.ID, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: id: %w", err)
		}
	}
	if m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", m.JSONRPC, "2.0")
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if m.HasMethod {
		return &jsonrpc.Request{ID: id, Method: m.Method, Params: m.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	r := &jsonrpc.Response{ID: id, Result: m.Result}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		we := &jsonrpc.Error{}
		if err := mcpwire.Decode(m.Error, we); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: error: %w", err)
		}
		r.Error = we
	}
	return r, nil
}

// directOK says whether a tool call may go directly (stdioConn.call):
// when mcpwire's rule lets the session's revision skip the SDK (up to
// 2025-11-25; from 2026-07-28 on a request carries its revision and the
// client in its _meta, and a result may ask for more rounds, which the
// SDK does).
func (c *Client) directOK() bool {
	r := c.cs.InitializeResult()
	return r != nil && mcpwire.MaySkipSDK(r.ProtocolVersion)
}

// directResult is a direct call's result as CallToolRaw gives it: a JSON
// object, compact, as the SDK's way gives it (json.Marshal of what it
// decoded), so that readers matching its bytes (refusedWrites's
// "isError":true) read both alike.
func directResult(raw json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("unmarshaling result: %w", err)
	}
	if b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, fmt.Errorf("unmarshaling result: not a JSON object: %.80s", b.Bytes())
	}
	return b.Bytes(), nil
}
