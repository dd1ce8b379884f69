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
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// A tools/call of a tool an extension's own MCP server serves is, on
// stdio, answered here, as fastList answers tools/list: the line is
// read, the call passed to the server through the same Manager the SDK's
// handler (callServer) calls, and the answer written in the SDK's bytes
// (TestFastCall compares them), without the SDK's server in between. Its
// handling of a request (a goroutine to read, one to take the message
// in, one to run the handler, and the request decoded four times, each
// time through a fresh 32 KiB buffer in go-sdk v1.8.0) cost more than
// the proxied call's own round trip: about 0.12 ms of the 0.4 ms gemkit
// added to a call (bench/extmcp).
//
// What the SDK would do with such a call is done here too: the client's
// progress token gets the server's progress, notifications/cancelled
// ends the call (and no answer follows, as MCP asks), the end of the
// session ends every call, and a call before the client said it is
// initialized, a call of another tool, and every request mcpwire's rule
// leaves to the SDK (those of the revisions from 2026-07-28 on among
// them) go on to it.

// serverRoute is where a served tool's calls go: the tool of the
// extension server key.
type serverRoute struct {
	key, tool string
}

// fastCalls are the fast path's calls under way on one stdio session,
// by the request's id as the client wrote it.
type fastCalls struct {
	mu      sync.Mutex
	running map[string]context.CancelFunc
}

// fastCall answers line, when it is a tools/call of a served server tool
// of the revisions up to 2025-11-25, on w, and reports whether it took
// the line. The call runs in a goroutine of its own, under ctx.
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
	// Members by their exact names, as the SDK reads them; what the rule
	// of mcpwire leaves to the SDK goes on to it.
	req, err := mcpwire.Read(line)
	if err != nil || !req.Is("tools/call") || req.JSONRPC != "2.0" || len(req.Params) == 0 {
		return false
	}
	params, err := mcpwire.ReadParams(req.Params)
	if err != nil || !params.Plain() {
		return false
	}
	id, ok := req.WireID()
	if !ok {
		return false
	}
	route, ok := (*routes)[params.Name]
	if !ok {
		return false
	}
	token, err := params.ProgressToken()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	if !calls.start(id, cancel) {
		// An id already under way is the SDK's to refuse.
		cancel()
		return false
	}
	args := params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	s.fastTaken.Add(1)
	var progress extmcp.Progress
	if token != nil {
		progress = func(p, total float64, msg string) {
			writeMessage(w, nil, "notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: total, Message: msg})
		}
	}
	go func() {
		defer cancel()
		res := s.callServerRoute(ctx, params.Name, route, args, progress)
		// A call the client cancelled gets no answer.
		if calls.end(id) && ctx.Err() == nil {
			writeMessage(w, id, "", res)
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
			calls.cancel(id)
		}
	}
}

func (c *fastCalls) start(id []byte, cancel context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.running[string(id)]; ok {
		return false
	}
	if c.running == nil {
		c.running = map[string]context.CancelFunc{}
	}
	c.running[string(id)] = cancel
	return true
}

// end forgets the call id; false when it was cancelled meanwhile.
func (c *fastCalls) end(id []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.running[string(id)]
	delete(c.running, string(id))
	return ok
}

func (c *fastCalls) cancel(id []byte) {
	c.mu.Lock()
	cancel, ok := c.running[string(id)]
	delete(c.running, string(id))
	c.mu.Unlock()
	if ok {
		cancel()
	}
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
			msg, _ := json.Marshal("the result could not be encoded: " + err.Error())
			out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
			out = append(out, `,"error":{"code":-32603,"message":`...)
			out = append(out, msg...)
			_, _ = w.Write(append(out, "}}\n"...))
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
