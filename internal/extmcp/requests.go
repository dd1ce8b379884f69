package extmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// Progress receives a call's progress notifications: the progress, the
// total (0: unknown) and the server's message.
type Progress func(progress, total float64, message string)

// Call calls tool of the server key (Spec.Key) with args, bounded by the
// server's timeout, and returns the server's result as it encoded it. An
// error says in words which extension's server failed and how, with the
// end of what it printed on stderr. progress, when not nil, asks the
// server for progress and receives it.
func (m *Manager) Call(ctx context.Context, key, tool string, args json.RawMessage, progress Progress) (json.RawMessage, error) {
	s, err := m.server(key)
	if err != nil {
		return nil, err
	}
	return s.request(ctx, Printable(tool), func(ctx context.Context, r *running) (json.RawMessage, error) {
		// A question the server asks during the call goes to its client
		// (elicit.go); one refused is said in its result.
		ctx, c := s.asking.begin(ctx, true)
		defer s.asking.end(c)
		res, err := s.call(ctx, r, tool, args, progress)
		return c.withAsked(res, err)
	})
}

// call is Call's request of the running server r.
func (s *server) call(ctx context.Context, r *running, tool string, args json.RawMessage, progress Progress) (json.RawMessage, error) {
	var token any
	if progress != nil {
		t := fmt.Sprintf("gemkit-%d", r.tokens.Add(1))
		r.progress.Store(t, progress)
		// Progress for a call that has ended is dropped: passed on,
		// it would reach the client after the call's result, for a
		// token the client no longer knows. On stdio the server's
		// progress comes before the answer it wrote next.
		defer r.progress.Delete(t)
		token = t
	}
	if r.denied == nil {
		return r.client.CallToolRaw(ctx, tool, args, token)
	}
	// A refusal during the call is said in the log as its result
	// says it: likely needed when the arguments name the host.
	defer s.reports.called(s.reports.calling(args))
	before := r.denied()
	res, err := r.client.CallToolRaw(ctx, tool, args, token)
	return s.withRefusals(r, before, r.denied(), args, res, err)
}

// withRefusals adds to a call's answer (res or err) what the sandbox
// refused the server during the call, before and after being what it
// had refused before it and after it: the proxy, the resolver and the
// watch of its connect calls record a refusal before they answer it, so
// before the server can answer. It is said to the model with the
// result, and a refused write the result tells of to the person too.
// res is compact, as CallToolRaw gives it.
func (s *server) withRefusals(r *running, before, after []netproxy.Denial, args, res json.RawMessage, err error) (json.RawMessage, error) {
	rs := s.refusedSince(before, after, r.data)
	if len(rs) > 0 {
		s.markNeeded(rs, args, res, err)
	}
	if err == nil {
		for _, w := range s.refusedWrites(args, res, r.data, r.tmp, r.readOnly) {
			// The watch of its writes reports by the path the call
			// named; the server's error is heard only of the others.
			if slices.ContainsFunc(rs, func(x Refusal) bool { return x.Path == w.Path }) {
				continue
			}
			s.withRun(&w)
			s.report(w)
			rs = append(rs, w)
		}
	}
	if len(rs) > 0 {
		if err == nil {
			return withLine(res, forModel(rs)), nil
		}
		err = fmt.Errorf("%w; %s", err, forModel(rs))
	}
	return res, err
}

// GetPrompt gets the prompt name of the server key with args, as Call
// calls a tool.
func (m *Manager) GetPrompt(ctx context.Context, key, name string, args map[string]string) (json.RawMessage, error) {
	s, err := m.server(key)
	if err != nil {
		return nil, err
	}
	return s.request(ctx, "the prompt "+Printable(name), func(ctx context.Context, r *running) (json.RawMessage, error) {
		ctx, c := s.asking.begin(ctx, false)
		defer s.asking.end(c)
		return c.withAsked(r.client.GetPromptRaw(ctx, name, args))
	})
}

// ReadResource reads the resource uri of the server key, as Call calls
// a tool.
func (m *Manager) ReadResource(ctx context.Context, key, uri string) (json.RawMessage, error) {
	s, err := m.server(key)
	if err != nil {
		return nil, err
	}
	return s.request(ctx, "the resource "+Printable(uri), func(ctx context.Context, r *running) (json.RawMessage, error) {
		ctx, c := s.asking.begin(ctx, false)
		defer s.asking.end(c)
		return c.withAsked(r.client.ReadResourceRaw(ctx, uri))
	})
}

// Subscribe subscribes to the resource uri of the server key: its
// notifications/resources/updated come as Events. The subscription
// keeps the server from idling, and is made again when the server
// starts again.
func (m *Manager) Subscribe(ctx context.Context, key, uri string) error {
	s, err := m.server(key)
	if err != nil {
		return err
	}
	_, err = s.request(ctx, "resources/subscribe of "+Printable(uri), func(ctx context.Context, r *running) (json.RawMessage, error) {
		if !r.caps.Subscribe {
			return nil, errors.New("it does not offer subscriptions to its resources")
		}
		if err := r.client.Subscribe(ctx, uri); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.proc.subscribe(uri)
		s.mu.Unlock()
		return nil, nil
	})
	return err
}

// Unsubscribe ends a Subscribe.
func (m *Manager) Unsubscribe(ctx context.Context, key, uri string) error {
	s, err := m.server(key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc.unsubscribe(uri)
	r := s.proc.run
	s.mu.Unlock()
	if r == nil || !r.caps.Subscribe {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	return r.client.Unsubscribe(ctx, uri)
}

// server is the server key, or an error in words when it is gone.
func (m *Manager) server(key string) (*server, error) {
	m.mu.Lock()
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil {
		return nil, errors.New("this MCP server is no longer served (its extension changed); list the tools again")
	}
	return s, nil
}

// request makes one request of the server (what names it in words),
// starting the server when it is not running, bounded by its timeout.
func (s *server) request(ctx context.Context, what string, do func(context.Context, *running) (json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	// A listing waits until the requests queued for s.mu have gone to
	// the server (listNow); passed hears each of them go.
	s.queued.Add(1)
	early := !s.proc.up.Load()
	if early {
		s.early.Add(1)
	}
	var gone sync.Once
	release := func() { // s.mu held
		s.queued.Add(-1)
		s.passed.Broadcast()
	}
	answered := func() { // s.mu held
		gone.Do(release)
		if early {
			s.early.Add(-1)
			s.passed.Broadcast()
		}
	}
	s.mu.Lock()
	r, err := s.ensure(ctx)
	if err != nil {
		answered()
		s.mu.Unlock()
		return nil, err
	}
	s.proc.inflight.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		answered()
		s.proc.inflight.Add(-1)
		s.touch()
		s.mu.Unlock()
	}()
	// Written: a listing waiting in s.passed (without s.mu) may go; the
	// request does not wait for s.mu, which a start under way holds.
	ctx = mcpclient.WithWritten(ctx, func() {
		gone.Do(func() {
			go func() {
				s.mu.Lock()
				release()
				s.mu.Unlock()
			}()
		})
	})
	res, err := do(ctx, r)
	if err == nil {
		return res, nil
	}
	return nil, s.requestFailure(r, what, err, ctx.Err)
}

// requestFailure is the error of a request (what names it in words) of
// the run r that failed with err, in words naming the server, how it
// failed and what happens next; ctxErr says the request's context's
// error (its deadline, or its caller's cancel, which is returned as it
// is), asked as it goes, since the deadline may pass meanwhile.
func (s *server) requestFailure(r *running, what string, err error, ctxErr func() error) error {
	if ctxErr() == nil && s.ended() {
		return &stopped{fmt.Sprintf("%s did not answer %s: %s", s.who(), what, stoppedForGood)}
	}
	if ended, why := r.client.Ended(); ended && ctxErr() == nil && errors.Is(why, mcpclient.ErrMessageTooLarge) {
		return s.broke(r, fmt.Sprintf("printed a message over %d MiB on its stdout during the call of %s", mcpclient.MaxMessage>>20, what))
	}
	// A line that is not JSON-RPC ends the connection, and the server,
	// its stdin closed, may exit of it: said before the exit. The call's
	// own error carries the line's (a direct call's), or the session's
	// end does (a call through the SDK).
	if ended, why := r.client.Ended(); ctxErr() == nil && (notJSONRPC(err) || ended && notJSONRPC(why)) {
		if !notJSONRPC(err) {
			err = why
		}
		return s.broke(r, "printed something other than MCP's JSON-RPC on its stdout during the call of "+what+" ("+oneLine(err.Error())+")")
	}
	if ctxErr() == nil && r.exitedSoon() {
		if b := r.broke.Load(); b != nil {
			// Stopped by gemkit (its data folder full), not of itself.
			return s.failure(*b + " during the call of " + what + ", so gemkit stopped it")
		}
		return s.failure("exited during the call of " + what + "; it is started again at the next call")
	}
	if ctxErr() == context.DeadlineExceeded {
		return s.failure("did not answer " + what + " within " + s.timeout().String())
	}
	if err := ctxErr(); err != nil {
		return err
	}
	if ended, why := r.client.Ended(); ended {
		return s.broke(r, "broke its MCP connection during the call of "+what+" ("+oneLine(why.Error())+")")
	}
	return s.failure("failed to answer " + what + ": " + oneLine(err.Error()))
}
