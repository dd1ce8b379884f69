package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
)

// The calls of 2026-07-28 whose server asked a question, parked while
// the client asks the person (extask.go).

// extCall is a call of an extension server's tool for a client of
// 2026-07-28: it runs on its own, and its questions end the answers to
// the client's requests (await).
type extCall struct {
	state     string // its requestState
	principal any    // the session it was begun on, nil for none
	tool      string
	args      string // the digest of its arguments
	cancel    context.CancelFunc
	// asked takes each question of the server's; done the result.
	asked chan *question
	done  chan *mcp.CallToolResult
	// current is the question the next retry answers.
	current *question
	// progress sends the server's progress to the request waiting now.
	progress atomic.Pointer[extmcp.Progress]
	asks     atomic.Int64
}

// question is a server's question and where its answer goes.
type question struct {
	key   string
	q     extmcp.Question
	reply chan reply
}

type reply struct {
	a   extmcp.Answer
	err error
}

// ask is the call's Asker: the question ends the answer of the request
// waiting (await), and the answer comes with the retry (resume).
func (c *extCall) ask(ctx context.Context, q extmcp.Question) (extmcp.Answer, error) {
	qu := &question{key: fmt.Sprintf("gemkit-question-%d", c.asks.Add(1)), q: q, reply: make(chan reply, 1)}
	select {
	case c.asked <- qu:
	case <-ctx.Done():
		return extmcp.Answer{}, ctx.Err()
	}
	select {
	case r := <-qu.reply:
		return r.a, r.err
	case <-ctx.Done():
		return extmcp.Answer{}, ctx.Err()
	}
}

// parkedCalls are the calls waiting for a retry, by their requestState.
type parkedCalls struct {
	mu      sync.Mutex
	byState map[string]*extCall
}

// park keeps c until its retry; false when too many wait.
func (p *parkedCalls) park(c *extCall) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byState == nil {
		p.byState = map[string]*extCall{}
	}
	if len(p.byState) >= maxParked {
		return false
	}
	p.byState[c.state] = c
	return true
}

// drop forgets c, if it waits.
func (p *parkedCalls) drop(c *extCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byState[c.state] == c {
		delete(p.byState, c.state)
	}
}

// claim takes the call of state for a retry of tool with the arguments
// of digest by principal, or says why not.
func (p *parkedCalls) claim(state string, principal any, tool, digest string) (*extCall, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.byState[state]
	switch {
	case c == nil:
		return nil, "gemkit holds no question of that requestState (it was answered already, its call ended more than a minute ago, or another gemkit mcp asked it): call the tool again"
	case c.principal != principal:
		return nil, "that requestState was given to another session: a question is answered on the session that was asked it"
	case c.tool != tool || c.args != digest:
		return nil, "that requestState was given for another call (another tool, or other arguments): retry the call it was given for, as it was"
	}
	delete(p.byState, state)
	return c, ""
}

// await answers the request waiting on c (under ctx) with what comes
// first: the call's result, or a question of its server, which parks
// the call and goes to the client in an input_required result. The
// request's end, or the client's cancel of it, ends the call.
func (s *Server) await(ctx context.Context, c *extCall) *mcp.CallToolResult {
	select {
	case res := <-c.done:
		return res
	case q := <-c.asked:
		c.current = q
		if !s.parked.park(c) {
			q.reply <- reply{err: fmt.Errorf("%d calls of the extensions' servers already wait for the person's answer to a question", maxParked)}
			c.current = nil
			return s.await(ctx, c)
		}
		return inputRequired(c)
	case <-ctx.Done():
		c.cancel()
		return textResult("The call was cancelled.", true)
	}
}

// inputRequired is the input_required result of c's current question.
func inputRequired(c *extCall) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{c.current.key: elicitParams(c.current.q)},
		RequestState:  c.state,
	}
}

// resume answers a retry (req, with args) that carries a requestState
// or input responses: the answer goes to the server that asked, and the
// retry gets what comes next. A retry that answers nothing is asked the
// same question again, as MCP asks of a server missing an answer.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest, args []byte) *mcp.CallToolResult {
	c, why := s.parked.claim(req.Params.RequestState, principal(ctx, req), req.Params.Name, digest(args))
	if why != "" {
		return textResult("Not run: "+why+".", true)
	}
	res, ok := req.Params.InputResponses[c.current.key].(*mcp.ElicitResult)
	if !ok || res == nil {
		if !s.parked.park(c) {
			c.cancel()
			return textResult("Not run: too many calls wait for an answer.", true)
		}
		return inputRequired(c)
	}
	c.current.reply <- reply{a: answerOf(res)}
	c.current = nil
	progress := s.progressFor(ctx, req)
	c.progress.Store(&progress)
	return s.await(ctx, c)
}
