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
// initialized, a call of another tool, and every request of the
// revisions from 2026-07-28 on (their _meta, which the SDK checks, and
// their multi-round-trip results) are left to the SDK.

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

// callRequest is what the fast paths read of a tools/call or tools/list
// line.
type callRequest struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  *callParams
}

type callParams struct {
	Name                         string
	Arguments, Meta              json.RawMessage
	InputResponses, RequestState json.RawMessage
	Cursor                       *string // of tools/list (fastList)
}

// decodeCall reads line as a tools/call request, each member by its
// exact name, as JSON-RPC has them and the SDK's decoder reads them since
// go-sdk#805: encoding/json would also take "Name" or "ID" for a struct's
// field, the last one winning, and the fast path would then call another
// tool, or answer another id, than the SDK.
func decodeCall(line []byte) (callRequest, bool) {
	var top map[string]json.RawMessage
	var req callRequest
	if json.Unmarshal(line, &top) != nil ||
		exact(top, "jsonrpc", &req.JSONRPC) != nil || exact(top, "method", &req.Method) != nil {
		return req, false
	}
	req.ID = top["id"]
	raw, ok := top["params"]
	if !ok {
		return req, true
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(raw, &params) != nil || params == nil {
		return req, false
	}
	p := &callParams{Arguments: params["arguments"], Meta: params["_meta"],
		InputResponses: params["inputResponses"], RequestState: params["requestState"]}
	if exact(params, "name", &p.Name) != nil || exact(params, "cursor", &p.Cursor) != nil {
		return req, false
	}
	req.Params = p
	return req, true
}

// exact decodes the member name of m into v, if there is one.
func exact(m map[string]json.RawMessage, name string, v any) error {
	if raw, ok := m[name]; ok {
		return json.Unmarshal(raw, v)
	}
	return nil
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
	req, ok := decodeCall(line)
	if !ok || req.Method != "tools/call" || req.JSONRPC != "2.0" || req.Params == nil ||
		len(req.Params.InputResponses) > 0 || len(req.Params.RequestState) > 0 ||
		bytes.Contains(req.Params.Meta, []byte(`"io.modelcontextprotocol/`)) {
		return false
	}
	id, ok := wireID(req.ID)
	if !ok {
		return false
	}
	route, ok := (*routes)[req.Params.Name]
	if !ok {
		return false
	}
	var token any
	if len(req.Params.Meta) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(req.Params.Meta, &m) != nil || exact(m, "progressToken", &token) != nil {
			return false
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	if !calls.start(id, cancel) {
		// An id already under way is the SDK's to refuse.
		cancel()
		return false
	}
	args := req.Params.Arguments
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
		res := s.callServerRoute(ctx, req.Params.Name, route, args, progress)
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
	var top, params map[string]json.RawMessage
	var method string
	if json.Unmarshal(line, &top) != nil || exact(top, "method", &method) != nil || method != "notifications/cancelled" ||
		exact(top, "params", &params) != nil {
		return
	}
	if id, ok := wireID(params["requestId"]); ok {
		calls.cancel(id)
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

// wireID is a request id as the SDK writes it back (jsonrpc.MakeID): a
// number as an integer, a string as a JSON string; ok is false for an id
// the SDK would refuse, or a notification's (none).
func wireID(raw json.RawMessage) ([]byte, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case float64:
		return strconv.AppendInt(nil, int64(v), 10), true
	case string:
		b, err := json.Marshal(v)
		return b, err == nil
	}
	return nil, false
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
