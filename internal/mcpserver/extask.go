package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// A question an extension's server asks the person during a call
// (extmcp's elicit.go checks it, labels it and finds its call) goes to
// the client that made the call, in the client's revision:
//
//   - up to 2025-11-25, as an elicitation/create of gemkit's own, sent
//     while the client's tools/call waits, under that call's context (on
//     Streamable HTTP, on the call's own stream);
//   - from 2026-07-28 on, where a server may send no request of its own,
//     as the call's answer: an input_required result whose inputRequests
//     hold the question and whose requestState names the call, which
//     goes on meanwhile, its server waiting for the answer. The client's
//     retry carries the answer in inputResponses (multi round-trip
//     requests, specification 2026-07-28, basic/patterns/mrtr); gemkit
//     hands it to the server and answers the retry with what comes next:
//     the result, or the next question.
//
// A requestState is 128 random bits, an entry in gemkit's memory rather
// than a state to trust: it is taken once, only for the same tool and
// arguments, only on the session it was given on where the transport
// has sessions (stdio, and Streamable HTTP up to 2025-11-25; the
// stateless Streamable HTTP of 2026-07-28 has none, and its bearer token
// is the same for every client), and only until kept after the call
// ended. Anything else is told in words, as a tool error.

// maxParked bounds the calls that wait for a retry.
const maxParked = 64

// keepParked is how long a call's result waits for the retry once the
// call ended.
const keepParked = time.Minute

// clientOf is who req comes from, for the extensions' servers: its name
// and the elicitation modes it declared (on 2026-07-28 in the request's
// _meta, before in initialize). A capability with neither mode is form
// mode (MCP 2025-11-25 and 2026-07-28, client/elicitation).
func clientOf(req mcp.Request) extmcp.Client {
	var c extmcp.Client
	var caps *mcp.ClientCapabilities
	ss, _ := req.GetSession().(*mcp.ServerSession)
	init := (*mcp.InitializeParams)(nil)
	if ss != nil {
		init = ss.InitializeParams()
	}
	if r, ok := req.(*mcp.InitializeRequest); ok && r.Params != nil {
		// Before the SDK has it: the reader of stdio waits for its
		// answer, and the fast path then knows what it declared.
		init = r.Params
	}
	if init != nil {
		caps = init.Capabilities
		if init.ClientInfo != nil {
			c.Name = init.ClientInfo.Name
		}
	}
	if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok && !isInitialize(req) {
		if rc := r.ClientCapabilities(); rc != nil {
			caps = rc
		}
	}
	if caps != nil && caps.Elicitation != nil {
		e := caps.Elicitation
		c.Modes = extmcp.Modes{Form: e.Form != nil || e.URL == nil, URL: e.URL != nil}
	}
	return c
}

func isInitialize(req mcp.Request) bool {
	_, ok := req.(*mcp.InitializeRequest)
	return ok
}

// forClient is ctx for a request of req's client to the extensions'
// servers: a server started for it declares the client's modes. On
// stdio, the one client is also the client of starts made for none.
func (s *Server) forClient(ctx context.Context, req mcp.Request) context.Context {
	if s.cfg.Servers == nil {
		return ctx
	}
	c := clientOf(req)
	if o, _ := ctx.Value(stdioOrderKey{}).(*stdioOrder); o != nil {
		s.cfg.Servers.SetClient(c)
		o.elicits.Store(c.Modes.Any())
	}
	return extmcp.WithClient(ctx, c)
}

// askingCall is a call of the served tool name, route's, for req, whose
// server's questions go to req's client.
func (s *Server) askingCall(ctx context.Context, req *mcp.CallToolRequest, route serverRoute, progress extmcp.Progress) *mcp.CallToolResult {
	name, args := req.Params.Name, arguments(req)
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return s.resume(ctx, req, args)
	}
	c := clientOf(req)
	if !c.Modes.Any() {
		return s.callServerRoute(extmcp.WithClient(ctx, c), name, route, args, progress)
	}
	if !stateless(req) {
		c.Ask = func(qctx context.Context, q extmcp.Question) (extmcp.Answer, error) {
			return elicitInline(ctx, qctx, req.Session, q)
		}
		return s.callServerRoute(extmcp.WithClient(ctx, c), name, route, args, progress)
	}
	state, err := newState()
	if err != nil {
		return textResult(err.Error(), true)
	}
	call := &extCall{state: state, principal: principal(ctx, req), tool: name, args: digest(args),
		asked: make(chan *question), done: make(chan *mcp.CallToolResult, 1)}
	call.progress.Store(&progress)
	c.Ask = call.ask
	cctx, cancel := context.WithCancel(extmcp.WithClient(context.WithoutCancel(ctx), c))
	call.cancel = cancel
	go func() {
		defer cancel()
		call.done <- s.callServerRoute(cctx, name, route, args, func(p, total float64, msg string) {
			if f := *call.progress.Load(); f != nil {
				f(p, total, msg)
			}
		})
		time.AfterFunc(keepParked, func() { s.parked.drop(call) })
	}()
	return s.await(ctx, call)
}

// stateless reports whether req is of a revision from 2026-07-28 on.
func stateless(req *mcp.CallToolRequest) bool {
	if ss := req.Session; ss != nil {
		if p := ss.InitializeParams(); p != nil {
			return mcpwire.IsStateless(p.ProtocolVersion)
		}
	}
	return false
}

// principal is what a requestState is bound to on req's transport: the
// session, where it has one.
func principal(ctx context.Context, req *mcp.CallToolRequest) any {
	if ctx.Value(stdioOrderKey{}) != nil || req.Session != nil && req.Session.ID() != "" {
		return req.Session
	}
	return nil
}

// digest identifies a call's arguments, whatever their order.
func digest(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = b
		}
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// newState is a fresh requestState.
func newState() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("gemkit could not make the state of a question: %w", err)
	}
	return "gemkit-" + hex.EncodeToString(b[:]), nil
}

// elicitInline puts q to the client of session as an elicitation/create
// under the context of its call (callCtx), for as long as the server
// waits for it (qctx).
func elicitInline(callCtx, qctx context.Context, session *mcp.ServerSession, q extmcp.Question) (extmcp.Answer, error) {
	ctx, cancel := context.WithCancel(callCtx)
	defer cancel()
	defer context.AfterFunc(qctx, cancel)()
	res, err := session.Elicit(ctx, elicitParams(q))
	if err != nil {
		return extmcp.Answer{}, fmt.Errorf("the client did not answer the question: %w", err)
	}
	return answerOf(res), nil
}

// elicitParams is q as the SDK sends it.
func elicitParams(q extmcp.Question) *mcp.ElicitParams {
	p := &mcp.ElicitParams{Mode: q.Mode, Message: q.Message, URL: q.URL, ElicitationID: q.ID}
	if q.Mode == "form" {
		schema := q.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		p.RequestedSchema = schema
	}
	return p
}

func answerOf(res *mcp.ElicitResult) extmcp.Answer {
	a := extmcp.Answer{Action: res.Action}
	if res.Action == "accept" && res.Content != nil {
		a.Content, _ = json.Marshal(res.Content)
	}
	return a
}
