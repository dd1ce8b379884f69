package extmcp

import (
	"context"
	"encoding/json"

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
// that log, and to each started later.
func (m *Manager) SetLevel(ctx context.Context, level string) {
	m.level.Store(&level)
	all := m.all()
	for _, s := range all {
		s.mu.Lock()
		r := s.proc.run
		s.mu.Unlock()
		if r == nil || !r.caps.Logging {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, s.startTimeout())
		if err := r.client.SetLogLevel(lctx, level); err != nil {
			m.log.Debug("an extension's MCP server refused logging/setLevel", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
		}
		cancel()
	}
}

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
// the one before: the log level, the subscriptions. The caller holds
// s.mu.
func (s *server) resume(ctx context.Context, r *running) {
	var level string
	if l := s.m.level.Load(); l != nil {
		level = *l
	}
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	if level != "" && r.caps.Logging {
		if err := r.client.SetLogLevel(ctx, level); err != nil {
			s.m.log.Debug("an extension's MCP server refused logging/setLevel", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
		}
	}
	if !r.caps.Subscribe {
		return
	}
	for uri := range s.proc.subs {
		if err := r.client.Subscribe(ctx, uri); err != nil {
			s.m.log.Warn("an extension's MCP server refused a subscription it had taken before it started again", "extension", s.spec.Extension, "server", s.spec.Server, "uri", uri, "err", err)
		}
	}
}
