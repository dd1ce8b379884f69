package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// A tools/call of a tool an extension's own MCP server serves is, on
// stdio, answered here, as fastList answers tools/list, without the
// SDK's server in between: its handling of a request (a goroutine to
// read, one to take the message in, one to run the handler, and the
// request decoded four times) cost more than the proxied call's own
// round trip (bench/extmcp).
//
// When the server is running, the call is forwarded (extmcp's
// Manager.Forward): the request goes to the server from the goroutine
// that read the client's line, under an id of gemkit's, and the server's
// answer is written back from the goroutine that reads the server, under
// the client's id, with the result as the server wrote it: no goroutine
// of its own between the two, and nothing decoded but the members the
// way needs (the id, the method, the tool's name; of the answer its id,
// and whether it is a tool error). A process that copies bytes between
// the two does no less. The result is the same JSON value the SDK's way
// wrote (TestFastCall compares them; the SDK decoded it into its types
// and encoded it again, in other bytes, and left out what its types do
// not name), except where Call adds to it: what the sandbox refused the
// server during the call, and a refused write a tool error tells of,
// which come as Call words them, as does every failure (the server's
// error, its death, an overlong message, the timeout). A server not
// running is started by the call, in a goroutine, as before.
//
// What the SDK would do with such a call is done here too: the client's
// progress token gets the server's progress, notifications/cancelled
// ends the call (the server is told under its own id, and no answer
// follows, as MCP asks), the end of the session ends every call, and a
// call before the client said it is initialized, a call of another tool,
// and every request mcpwire's rule leaves to the SDK (those of the
// revisions from 2026-07-28 on among them) go on to it. What the server
// asks of gemkit during a call (roots, sampling) its client answers, as
// before.

// serverRoute is where a served tool's calls go: the tool of the
// extension server key.
type serverRoute struct {
	key, tool string
}

// fastCalls are the fast path's calls under way on one stdio session,
// by the request's id as the client wrote it.
type fastCalls struct {
	mu      sync.Mutex
	running map[string]func() // nil until the call's cancel is known
}

// fastCall answers line, when it is a tools/call of a served server tool
// of the revisions up to 2025-11-25, on w, and reports whether it took
// the line: forwarded to the running server, or, when it is not
// running, in a goroutine of its own under ctx.
func (s *Server) fastCall(ctx context.Context, calls *fastCalls, line []byte, w io.Writer) bool {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return false
	}
	// Routes of servers not listed since one said its list changed (or
	// since a reload) are stale: the SDK's handler lists them again first.
	routes := s.serverRoutes.Load()
	if routes == nil || len(*routes) == 0 || !s.serversListed() {
		return false
	}
	// Members by their exact names, as the SDK reads them, in one pass
	// over the line (mcpwire.Scan, which copies nothing) where the line
	// has the plain shape clients write, else as Read decodes them; what
	// the rule of mcpwire leaves to the SDK goes on to it.
	req, ok := mcpwire.Scan(line)
	if !ok {
		var err error
		if req, err = mcpwire.Read(line); err != nil {
			return false
		}
	}
	if !req.Is("tools/call") || req.JSONRPC != "2.0" || len(req.Params) == 0 {
		return false
	}
	params, ok := mcpwire.ScanParams(req.Params)
	if !ok {
		var err error
		if params, err = mcpwire.ReadParams(req.Params); err != nil {
			return false
		}
	}
	if !params.Plain() {
		return false
	}
	wire, ok := req.WireID()
	if !ok {
		return false
	}
	route, ok := (*routes)[params.Name]
	if !ok {
		return false
	}
	token, ok := mcpwire.ScanProgressToken(params.Meta)
	if !ok {
		var err error
		if token, err = params.ProgressToken(); err != nil {
			return false
		}
	}
	// What outlives the line (its reader reuses its buffer) is copied:
	// the id, which the answer is written under, and the arguments, which
	// a refusal's words look at.
	id := string(wire)
	if !calls.start(id) {
		// An id already under way is the SDK's to refuse.
		return false
	}
	args := params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else {
		args = bytes.Clone(args)
	}
	s.fastTaken.Add(1)
	var progress extmcp.Progress
	if token != nil {
		progress = func(p, total float64, msg string) {
			writeMessage(w, nil, "notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: total, Message: msg})
		}
	}
	name := params.Name
	// A running server's call is forwarded: the answer comes back from
	// the goroutine that reads the server, and is written from there.
	if cancel, ok := s.cfg.Servers.Forward(route.key, route.tool, args, progress, func(res json.RawMessage, err error) {
		// A call the client cancelled gets no answer.
		if !calls.end(id) {
			return
		}
		if err != nil {
			s.log.Warn("an extension's MCP server failed a call", "tool", name, "err", err)
			writeMessage(w, []byte(id), "", textResult(err.Error(), true))
			return
		}
		writeResult(w, id, res)
	}); ok {
		calls.set(id, cancel)
		return true
	}
	// One that is not running is started by the call, in a goroutine.
	ctx, cancel := context.WithCancel(ctx)
	calls.set(id, cancel)
	go func() {
		defer cancel()
		res := s.callServerRoute(ctx, name, route, args, progress)
		if calls.end(id) && ctx.Err() == nil {
			writeMessage(w, []byte(id), "", res)
		}
	}()
	return true
}

// cancelled ends the fast call a notifications/cancelled line names, if
// any; the line goes on to the SDK either way.
func (s *Server) cancelled(calls *fastCalls, line []byte) {
	if !bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		return
	}
	m, err := mcpwire.Read(line)
	if err != nil || !m.Is("notifications/cancelled") {
		return
	}
	if p, err := mcpwire.ReadParams(m.Params); err == nil {
		if id, ok := mcpwire.WireID(p.RequestID); ok {
			calls.cancel(string(id))
		}
	}
}

// start takes the call id, and reports whether it was not under way
// already.
func (c *fastCalls) start(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.running[id]; ok {
		return false
	}
	if c.running == nil {
		c.running = map[string]func(){}
	}
	c.running[id] = nil
	return true
}

// set gives the call id, if still under way, the function that cancels
// it.
func (c *fastCalls) set(id string, cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.running[id]; ok {
		c.running[id] = cancel
	}
}

// end forgets the call id; false when it was cancelled meanwhile.
func (c *fastCalls) end(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.running[id]
	delete(c.running, id)
	return ok
}

func (c *fastCalls) cancel(id string) {
	c.mu.Lock()
	cancel, ok := c.running[id]
	delete(c.running, id)
	c.mu.Unlock()
	if ok && cancel != nil {
		cancel()
	}
}

// cancelAll cancels every call under way: the session ended.
func (c *fastCalls) cancelAll() {
	c.mu.Lock()
	all := c.running
	c.running = nil
	c.mu.Unlock()
	for _, cancel := range all {
		if cancel != nil {
			cancel()
		}
	}
}

// writeResult writes, as one line, the response to id with res, a
// result as its server wrote it (one line's JSON).
func writeResult(w io.Writer, id string, res json.RawMessage) {
	out := make([]byte, 0, len(res)+len(id)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, res...)
	out = append(out, "}\n"...)
	_, _ = w.Write(out)
}

// writeMessage writes, as one line, a response to id with result, or
// (id nil) a notification of method with params, encoded as the SDK
// encodes them (HTML characters not escaped). A result that cannot be
// encoded is answered with JSON-RPC's internal error, as the SDK answers
// it, so that the client is not left waiting.
func writeMessage(w io.Writer, id []byte, method string, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if id != nil {
			answerError(w, id, jsonrpc.CodeInternalError, "the result could not be encoded: "+err.Error())
		}
		return
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	out := make([]byte, 0, len(body)+64)
	out = append(out, `{"jsonrpc":"2.0",`...)
	if id != nil {
		out = append(out, `"id":`...)
		out = append(out, id...)
		out = append(out, `,"result":`...)
	} else {
		out = append(out, `"method":`...)
		out = strconv.AppendQuote(out, method)
		out = append(out, `,"params":`...)
	}
	out = append(out, body...)
	out = append(out, "}\n"...)
	_, _ = w.Write(out)
}
