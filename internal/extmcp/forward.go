package extmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// A call forwarded (Manager.Forward) is Call without a goroutine of its
// own: the request goes to the running server from the caller's
// goroutine (gemkit mcp's reader of its client's stdin), and the answer
// is handed on from the goroutine that reads the server's stdout, so
// that a call wakes no more goroutines than a process that copies bytes
// between the two (bench/extmcp). What Call adds to an answer, it adds
// too, and in the same words: what the sandbox refused the server during
// the call, a refused write an error result tells of, and, for a call
// that failed, why (the server's error, its death, an overlong message,
// the timeout). Those rarer answers are made in a goroutine, as is
// everything that takes the server's mu: a start holds it across the
// server's start, and the reading goroutine must not wait for it.

// Forward calls tool of the server key with args, as Call does, when the
// server is running and its client forwards calls (mcpclient's
// Client.Forward), and reports whether it took the call; a server not
// running (Call starts it), or one whose state another goroutine holds
// at the moment, is not taken. done receives the answer once: the
// result, as the server wrote it unless Call would have added to it, or
// an error in Call's words; on the fast way it is called from the
// goroutine that reads the server, and must not block. cancel gives the
// call up (the server is sent notifications/cancelled, done is not
// called), as the end of Call's context does.
func (m *Manager) Forward(key, tool string, args json.RawMessage, progress Progress, done func(res json.RawMessage, err error)) (cancel func(), ok bool) {
	if !m.mu.TryLock() {
		return nil, false
	}
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil || !s.mu.TryLock() {
		return nil, false
	}
	r := s.proc.run
	if r == nil || r.client == nil || !r.client.CanForward() {
		s.mu.Unlock()
		return nil, false
	}
	if s.proc.idle == nil {
		s.touch()
	}
	s.proc.inflight.Add(1)
	s.mu.Unlock()
	m.forwarded.Add(1)
	f := &forwarded{s: s, r: r, tool: tool, args: args, done: done}
	// A question the server asks meanwhile is refused: the fast way
	// carries the calls of clients that take none (elicit.go), named in
	// the refusal's words where SetClient said which.
	ctx := context.Background()
	if c := m.client.Load(); c != nil {
		ctx = WithClient(ctx, *c)
	}
	_, f.asked = s.asking.begin(ctx, true)
	if r.denied != nil {
		// As Call does: the log says a refusal during the call as its
		// result says it.
		f.call = s.reports.calling(args)
		f.before = r.denied()
	}
	if progress != nil {
		f.token = fmt.Sprintf("gemkit-%d", r.tokens.Add(1))
		r.progress.Store(f.token, progress)
	}
	cancelCall, err := r.client.Forward(tool, args, f.token, f.answered)
	if err != nil {
		// The connection ended already: as Call says it.
		if f.finish() {
			go f.failed(err, nil)
		}
		return func() {}, true
	}
	f.mu.Lock()
	f.cancelCall = cancelCall
	if !f.over {
		f.timer = time.AfterFunc(s.timeout(), f.timedOut)
	}
	f.mu.Unlock()
	return f.cancel, true
}

// Forwarded is how many calls Forward took.
func (m *Manager) Forwarded() int64 { return m.forwarded.Load() }

// forwarded is one call Forward took.
type forwarded struct {
	s      *server
	r      *running
	tool   string
	args   json.RawMessage
	before []netproxy.Denial // what the sandbox had refused the run before the call
	call   uint64            // the number of its arguments in flight (runReports.calling), 0 if none
	token  string            // the progress token the server was given, if any
	asked  *calling          // the call as questions find it (elicit.go)
	done   func(json.RawMessage, error)

	mu         sync.Mutex
	over       bool // answered, timed out or given up
	timer      *time.Timer
	cancelCall func(reason string) bool
}

// finish ends the call, and reports whether this was its end (the first
// of its answer, its timeout and its cancel).
func (f *forwarded) finish() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over {
		return false
	}
	f.over = true
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.token != "" {
		// Progress for a call that has ended is dropped, as Call drops
		// it: after the answer the client no longer knows the token.
		f.r.progress.Delete(f.token)
	}
	return true
}

// end records the end of the call, the server's use.
func (f *forwarded) end() {
	f.s.asking.end(f.asked)
	if f.call != 0 {
		f.s.reports.called(f.call)
	}
	p := &f.s.proc
	p.lastUse.Store(time.Now().UnixNano())
	p.inflight.Add(-1)
}

// refusedAfter is what the sandbox had refused the run by now.
func (f *forwarded) refusedAfter() []netproxy.Denial {
	if f.r.denied == nil {
		return nil
	}
	return f.r.denied()
}

// answered takes the server's answer, in the goroutine that reads it.
func (f *forwarded) answered(res json.RawMessage, err error) {
	if !f.finish() {
		return
	}
	after := f.refusedAfter()
	if err != nil {
		go f.failed(err, after)
		return
	}
	// Call adds to a result only what the sandbox refused during the call
	// and the refused writes a tool error tells of.
	if len(refusedSince(f.s.spec, f.before, after, f.r.data)) > 0 || toolError(res) || f.asked.refusedLine() != "" {
		go f.added(res, after)
		return
	}
	f.done(res, nil)
	f.end()
}

// added answers with res and what Call adds to it.
func (f *forwarded) added(res json.RawMessage, after []netproxy.Denial) {
	defer f.end()
	// Call's readers take the result compact, as CallToolRaw gives it.
	var b bytes.Buffer
	if json.Compact(&b, res) == nil {
		res = b.Bytes()
	}
	res, err := f.s.withRefusals(f.r, f.before, after, f.args, res, nil)
	f.done(f.asked.withAsked(res, err))
}

// failed answers a call that failed with err in Call's words.
func (f *forwarded) failed(err error, after []netproxy.Denial) {
	f.fail(err, after, nil)
}

// fail answers a call that failed with err, or whose deadline passed
// (ctxErr), in Call's words.
func (f *forwarded) fail(err error, after []netproxy.Denial, ctxErr error) {
	defer f.end()
	if after == nil {
		after = f.refusedAfter()
	}
	_, err = f.s.withRefusals(f.r, f.before, after, f.args, nil, err)
	f.done(f.asked.withAsked(nil, f.s.requestFailure(f.r, Printable(f.tool), err, func() error { return ctxErr })))
}

// timedOut ends a call the server did not answer within its timeout,
// in the timer's goroutine.
func (f *forwarded) timedOut() {
	if !f.finish() {
		return
	}
	f.mu.Lock()
	cancel := f.cancelCall
	f.mu.Unlock()
	cancel(context.DeadlineExceeded.Error())
	f.fail(context.DeadlineExceeded, nil, context.DeadlineExceeded)
}

// cancel gives the call up for its caller: no answer follows.
func (f *forwarded) cancel() {
	if !f.finish() {
		return
	}
	f.mu.Lock()
	cancel := f.cancelCall
	f.mu.Unlock()
	cancel(context.Canceled.Error())
	after := f.refusedAfter()
	if len(refusedSince(f.s.spec, f.before, after, f.r.data)) == 0 {
		f.end()
		return
	}
	// What the sandbox refused during the call is kept for doctor, as
	// Call keeps it.
	go func() {
		defer f.end()
		_, _ = f.s.withRefusals(f.r, f.before, after, f.args, nil, context.Canceled)
	}()
}

// toolError reports whether res, a result as a server wrote it, may be a
// tool error: whether it holds "isError" and true, as a member, with
// white space between them or not. A member nested deeper, or one whose
// name only ends so, makes it answer as Call does, at a goroutine's
// cost; a string cannot hold the quoted name unescaped.
func toolError(res []byte) bool {
	key := []byte(`"isError"`)
	for {
		i := bytes.Index(res, key)
		if i < 0 {
			return false
		}
		res = bytes.TrimLeft(res[i+len(key):], " \t\r\n")
		if len(res) > 0 && res[0] == ':' && bytes.HasPrefix(bytes.TrimLeft(res[1:], " \t\r\n"), []byte("true")) {
			return true
		}
	}
}
