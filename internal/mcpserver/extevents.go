package mcpserver

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// The servers' notifications reach the clients: their log (each line's
// logger named EXTENSION/SERVER, to clients that set a level, as the
// SDK's server sends no log before that), their list_changed (gemkit
// lists the server again, and the SDK tells the clients of what changed
// in gemkit's lists), and notifications/resources/updated of the
// resources a client subscribed to, under the URI it subscribed with. A
// client's logging/setLevel goes on to the servers.

// offerServers adds to opts what the extensions' servers may offer,
// when they are served: they start at the first use of a list, not at
// initialize, so it is declared before gemkit knows whether any of them
// offers it; a client that asks a server that does not (a subscription)
// is told so in words.
func (s *Server) offerServers(opts *mcp.ServerOptions) {
	if s.cfg.Servers == nil {
		return
	}
	opts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	opts.Capabilities.Resources.Subscribe = true
	opts.Capabilities.Logging = &mcp.LoggingCapabilities{}
	opts.SubscribeHandler, opts.UnsubscribeHandler = s.subscribe, s.unsubscribe
	// Declared at initialize only when a server offers it
	// (declareCompletions).
	opts.CompletionHandler = s.complete
	s.cfg.Servers.Listen(s.serverEvent)
}

// subscriptions are the clients' subscriptions to the servers'
// resources, by the URI a client subscribed with: a server is asked
// once per URI, and told when no session wants it any more (a session
// that subscribes twice, as the SDK keeps it, once).
type subscriptions struct {
	mu       sync.Mutex
	sessions map[string]map[*mcp.ServerSession]bool
	route    map[string]route
}

// subscribe is the SDK's SubscribeHandler: a doc needs nothing (it does
// not change but with the extension, which list_changed tells); a
// server's resource is subscribed to at its server, which must offer
// subscriptions.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if !isServerURI(uri) {
		return nil
	}
	s.listServers(ctx, true)
	rt := s.ext.routes.Load()
	if rt == nil {
		return mcp.ResourceNotFoundError(uri)
	}
	r, err := rt.resolve(uri)
	if err != nil {
		return err
	}
	subs := &s.ext.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if len(subs.sessions[uri]) == 0 {
		if err := s.cfg.Servers.Subscribe(ctx, r.key, r.uri); err != nil {
			return err
		}
	}
	if subs.sessions == nil {
		subs.sessions, subs.route = map[string]map[*mcp.ServerSession]bool{}, map[string]route{}
	}
	if subs.sessions[uri] == nil {
		subs.sessions[uri] = map[*mcp.ServerSession]bool{}
	}
	subs.sessions[uri][req.Session] = true
	subs.route[uri] = r
	return nil
}

// unsubscribe is the SDK's UnsubscribeHandler.
func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	subs := &s.ext.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if !subs.sessions[uri][req.Session] {
		return nil
	}
	if delete(subs.sessions[uri], req.Session); len(subs.sessions[uri]) > 0 {
		return nil
	}
	r := subs.route[uri]
	delete(subs.sessions, uri)
	delete(subs.route, uri)
	return s.cfg.Servers.Unsubscribe(ctx, r.key, r.uri)
}

// serverEvent takes a notification of a server's (extmcp.Manager.Listen).
func (s *Server) serverEvent(ev extmcp.Event) {
	switch ev.Method {
	case mcpclient.LogMessage:
		p := &mcp.LoggingMessageParams{}
		if json.Unmarshal(ev.Params, p) != nil {
			return
		}
		logger := ev.Spec.Extension + "/" + ev.Spec.Server
		if p.Logger != "" {
			logger += "/" + p.Logger
		}
		p.Logger = extmcp.Printable(logger)
		for ss := range s.mcp.Sessions() {
			if err := ss.Log(context.Background(), p); err != nil {
				s.log.Debug("a server's log could not be passed on", "err", err)
			}
		}
	case mcpclient.ToolsListChanged, mcpclient.PromptsListChanged, mcpclient.ResourcesChanged:
		// extmcp lists that server again; the SDK announces what it
		// changes in gemkit's lists.
		s.ext.listed.Store(false)
		go s.listServers(extmcp.Background(context.Background()), false)
	case mcpclient.ResourceUpdated:
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(ev.Params, &p) != nil {
			return
		}
		subs := &s.ext.subs
		subs.mu.Lock()
		var uris []string
		for uri, r := range subs.route {
			if r.key == ev.Spec.Key() && r.uri == p.URI {
				uris = append(uris, uri)
			}
		}
		subs.mu.Unlock()
		for _, uri := range uris {
			if err := s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				s.log.Debug("resources/updated", "err", err)
			}
		}
	}
}

// listMethods are the requests whose answer comes from a list the
// servers add to: the servers are listed before they are answered.
var listMethods = map[string]bool{
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"completion/complete": true,
}

// serversMiddleware lists the servers before a request that needs them,
// sends a read of a server's URI the SDK does not know to its server
// (routes.resolve), and passes logging/setLevel on to the servers.
func (s *Server) serversMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// A server started for the request declares what its client
		// takes (extask.go).
		ctx = s.forClient(ctx, req)
		if listMethods[method] && !s.servedServerCall(req) {
			s.listServers(ctx, true)
		}
		if s.cfg.Servers == nil {
			return next(ctx, method, req)
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if r.Params != nil && !s.serving(r.Params.Name) {
				if res := s.unservedCall(ctx, r.Params.Name); res != nil {
					return res, nil
				}
			}
		case *mcp.ReadResourceRequest:
			if r.Params != nil && isServerURI(r.Params.URI) {
				if rt := s.ext.routes.Load(); rt == nil || !rt.known(r.Params.URI) {
					return s.readUnlisted(ctx, r)
				}
			}
		case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
			res, err := next(ctx, method, req)
			if err == nil && r.Params != nil {
				s.cfg.Servers.SetLevel(ctx, string(r.Params.Level))
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// servedServerCall reports whether req calls a tool of an extension's
// server that is served now: such a call goes to its server at once,
// which starts for it if it is not running, rather than wait for a
// listing of the servers (after a server's restart, its listing may take
// as long as the server's start timeout). The server answers for its
// own tools, one it no longer has included; the listing, in the
// background, brings the new list.
func (s *Server) servedServerCall(req mcp.Request) bool {
	r, ok := req.(*mcp.CallToolRequest)
	if !ok || r.Params == nil {
		return false
	}
	routes := s.serverRoutes.Load()
	if routes == nil {
		return false
	}
	_, ok = (*routes)[r.Params.Name]
	return ok
}

// quietNotifications keeps back the list_changed notifications of the
// first listing of the servers (extState.quiet): the SDK announces every
// change of a list, and that one changed no list a client had.
func (s *Server) quietNotifications(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
			if s.ext.quiet.Load() {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}
