package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// A client's completion/complete of an argument of a server's prompt
// (ref/prompt, by the name gemkit serves it under) or resource template
// (ref/resource, by the URI template as served, or its gemkit-mcp://
// form) goes on to the server that lists it, with the server's own name
// or template, and the server's answer comes back as it is. A ref to
// nothing gemkit serves from a server is refused with invalid params,
// in words. The completions capability is declared only when a server
// gemkit serves declares it (extmcp.Manager.Completions: as it declared
// when it last started, since the servers start after initialize).

// complete is the SDK's CompletionHandler.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	// The names and templates are those of the lists, which the servers
	// middleware made before (listMethods): a client may ask before it
	// listed anything.
	p := req.Params
	if p.Ref == nil {
		// The SDK refuses it before, unless MCPGODEBUG turns its check
		// off (disablecompleteparamsvalidation).
		return nil, invalidRef("a completion names the prompt or resource template it completes in its ref (ref/prompt or ref/resource)")
	}
	r, ref, err := s.completionRoute(p.Ref)
	if err != nil {
		return nil, err
	}
	c := mcpclient.Completion{Ref: ref, Name: p.Argument.Name, Value: p.Argument.Value}
	if p.Context != nil {
		c.Arguments = p.Context.Arguments
	}
	raw, err := s.cfg.Servers.Complete(ctx, r.key, c)
	if err != nil {
		s.log.Warn("an extension's MCP server failed completion/complete", "ref", p.Ref.Name+p.Ref.URI, "err", err)
		return nil, err
	}
	res := &mcp.CompleteResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("the answer to completion/complete of %s cannot be read: %w", p.Ref.Name+p.Ref.URI, err)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, nil
}

// completionRoute says which server a completion's ref belongs to, and
// the ref as that server names it.
func (s *Server) completionRoute(ref *mcp.CompleteReference) (route, mcpclient.Ref, error) {
	rt := s.ext.routes.Load()
	if rt == nil {
		rt = &routes{}
	}
	switch ref.Type {
	case mcpclient.RefPrompt:
		if r, ok := rt.prompts[ref.Name]; ok {
			return r, mcpclient.Ref{Type: ref.Type, Name: r.uri}, nil
		}
		return route{}, mcpclient.Ref{}, invalidRef(fmt.Sprintf("gemkit serves no prompt named %q of an extension's MCP server (prompts/list names those it serves)", extmcp.Printable(ref.Name)))
	case mcpclient.RefResource:
		if key, own, ok := unqualified(ref.URI); ok {
			return route{key, own}, mcpclient.Ref{Type: ref.Type, URI: own}, nil
		}
		if r, ok := rt.byTemplate[ref.URI]; ok {
			return r, mcpclient.Ref{Type: ref.Type, URI: r.uri}, nil
		}
		if r, ok := rt.exact[ref.URI]; ok {
			return r, mcpclient.Ref{Type: ref.Type, URI: r.uri}, nil
		}
		return route{}, mcpclient.Ref{}, invalidRef(fmt.Sprintf("gemkit serves no resource template %q of an extension's MCP server (resources/templates/list names those it serves)", extmcp.Printable(ref.URI)))
	}
	return route{}, mcpclient.Ref{}, invalidRef(fmt.Sprintf("a completion's ref is of type %q, neither ref/prompt nor ref/resource", extmcp.Printable(ref.Type)))
}

// invalidRef is the JSON-RPC error of a completion whose ref gemkit
// cannot route.
func invalidRef(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: " + why}
}

// declareCompletions keeps the completions capability of an initialize
// (or server/discover) answer only when a server gemkit serves offers
// completions.
func (s *Server) declareCompletions(caps *mcp.ServerCapabilities) {
	if caps == nil || caps.Completions == nil {
		return
	}
	if s.cfg.Servers == nil || !s.cfg.Servers.Completions() {
		caps.Completions = nil
	}
}
