package extmcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/gemkit/gemkit/internal/mcpclient"
)

// Event is a notification of a server's, handed on to the Manager's
// listener (Listen): its log (mcpclient.LogMessage), a list of its
// that changed (after which Catalog lists it again), a resource of its
// that was updated.
type Event struct {
	Spec   Spec
	Method string
	Params json.RawMessage
}

// Listen makes f the receiver of the servers' Events (nil: none). f
// must not block: a server's notifications wait for it.
func (m *Manager) Listen(f func(Event)) {
	if f == nil {
		m.listen.Store(nil)
		return
	}
	m.listen.Store(&f)
}

// SetLevel passes a client's logging/setLevel on to the running servers
// that log, and to each started later. Each is asked at once, bounded by
// its optionalWait: one that lacks the method (answers an error, or
// nothing) is not asked again in its run, and holds up neither the
// others nor the client.
func (m *Manager) SetLevel(ctx context.Context, level string) {
	m.level.Store(&level)
	var wg sync.WaitGroup
	for _, s := range m.all() {
		s.mu.Lock()
		r := s.proc.run
		s.mu.Unlock()
		if r == nil {
			continue
		}
		wg.Go(func() { s.setLevel(ctx, r, level) })
	}
	wg.Wait()
}

// setLevel asks r for the log level, when it logs and was not found to
// lack logging/setLevel.
func (s *server) setLevel(ctx context.Context, r *running, level string) {
	if !r.caps.Logging || r.lacks.has(methodSetLevel) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.optionalWait())
	defer cancel()
	if err := r.client.SetLogLevel(ctx, level); err != nil {
		s.lacking(r, methodSetLevel, err)
	}
}

const methodSetLevel = "logging/setLevel"

// event takes a notification of the server's: a list that changed is
// listed again at the next Catalog; all go to the listener.
func (s *server) event(method string, params json.RawMessage) {
	switch method {
	case mcpclient.ToolsListChanged, mcpclient.PromptsListChanged, mcpclient.ResourcesChanged:
		// Not s.mu: stopping the server holds it while the SDK waits
		// for this handler to return.
		s.cache.stale.Store(true)
	}
	if f := s.m.listen.Load(); f != nil {
		(*f)(Event{Spec: s.spec, Method: method, Params: params})
	}
}

// resume gives a server that has just started what the clients asked of
// the one before: the log level, the subscriptions, before anything
// else is asked of it. Each is bounded by its optionalWait, not the
// start's: a server that lacks one (answers an error, or nothing) is
// served all the same. The caller holds s.mu.
func (s *server) resume(ctx context.Context, r *running) {
	if l := s.m.level.Load(); l != nil && *l != "" {
		s.setLevel(ctx, r, *l)
	}
	if !r.caps.Subscribe {
		return
	}
	for uri := range s.proc.subs {
		sctx, cancel := context.WithTimeout(ctx, s.optionalWait())
		if err := r.client.Subscribe(sctx, uri); err != nil {
			s.m.log.Warn("an extension's MCP server refused a subscription it had taken before it started again", "extension", s.spec.Extension, "server", s.spec.Server, "uri", uri, "err", err)
		}
		cancel()
	}
}
