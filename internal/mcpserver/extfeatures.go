package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// ServerScheme is the URI scheme of a server's resource that gemkit
// cannot serve under the server's own URI:
// gemkit-mcp://EXTENSION/SERVER/URI, the extension and server names
// path-escaped, the server's URI (or URI template) as it is.
//
// A server's resources keep their own URIs wherever they can: a server
// hands its URIs back inside its own results (a tool's resource_link or
// embedded resource, a prompt's messages, plain text), and a client
// reads them back as they are, so a URI gemkit renamed in the list would
// be unknown where the server names it. So gemkit routes a read by the
// URI itself: to the server that lists it, else to the one server one
// of whose templates matches it. Only a URI two servers list (or two
// servers' templates of the same text), or one in a scheme of gemkit's
// own (gemkit-doc, which would shadow an extension's doc, and
// gemkit-mcp), is listed in this qualified form, which always names one
// server; any server's URI may be read in it too.
const ServerScheme = "gemkit-mcp"

// qualified is uri of the server of spec in the ServerScheme form.
func qualified(spec extmcp.Spec, uri string) string {
	return ServerScheme + "://" + url.PathEscape(spec.Extension) + "/" + url.PathEscape(spec.Label()) + "/" + uri
}

// unqualified splits a ServerScheme URI into its server's key and the
// server's own URI.
func unqualified(uri string) (key, own string, ok bool) {
	rest, ok := strings.CutPrefix(uri, ServerScheme+"://")
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	ext, err1 := url.PathUnescape(parts[0])
	srv, err2 := url.PathUnescape(parts[1])
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return extmcp.KeyOf(ext, srv), parts[2], true
}

// route is where a served URI goes: the server's key and its own URI.
type route struct{ key, uri string }

// routes take the URIs a client reads, and the prompts and templates it
// asks to complete, to the servers.
type routes struct {
	exact     map[string]route // the listed resources, by served URI
	templates []templateRoute
	// prompts are the served prompts, by served name, with the server's
	// own name; byTemplate the served templates, by served URI template,
	// with the server's own.
	prompts, byTemplate map[string]route
	// only is the key of the one server with resources, "" when not one.
	only string
}

// templateRoute is a served template's. Its expressions are compiled at
// the first read that needs them, not at the listing that serves it: the
// first list (a client's first request after its initialize) compiled
// two for each template of every server, 0.3 ms of gemkit's CPU during
// the start of the servers it lists (bench/README.md).
type templateRoute struct {
	key string
	re  func() *regexp.Regexp // matches the server's own URIs
	// served matches the URIs of the template as served: the SDK reads
	// those through it.
	served func() *regexp.Regexp
}

// known reports whether the SDK has a handler for uri: a listed
// resource's, or a served template's that matches it.
func (rt *routes) known(uri string) bool {
	if _, ok := rt.exact[uri]; ok {
		return true
	}
	for _, t := range rt.templates {
		if t.served().MatchString(uri) {
			return true
		}
	}
	return false
}

// resolve says which server a URI a client reads belongs to.
func (rt *routes) resolve(uri string) (route, error) {
	if key, own, ok := unqualified(uri); ok {
		return route{key, own}, nil
	}
	if r, ok := rt.exact[uri]; ok {
		return r, nil
	}
	keys := map[string]bool{}
	for _, t := range rt.templates {
		if t.re().MatchString(uri) {
			keys[t.key] = true
		}
	}
	switch {
	case len(keys) == 1:
		for k := range keys {
			return route{k, uri}, nil
		}
	case len(keys) > 1:
		return route{}, fmt.Errorf("the resource templates of more than one extension's MCP server match %s; read it as %s://EXTENSION/SERVER/%s", uri, ServerScheme, uri)
	case rt.only != "":
		// A URI the server handed back but does not list (one it made
		// since), of the one server that has resources.
		return route{rt.only, uri}, nil
	}
	return route{}, mcp.ResourceNotFoundError(uri)
}

// catalogServed is what serveCatalog handed the SDK: the served names
// and URIs with the JSON of each, to leave alone what did not change
// (the SDK announces every addition).
type catalogServed struct {
	prompts, resources, templates map[string]string
}

// serveCatalog serves the servers' prompts, resources and resource
// templates as last listed, in place of those served so far. The caller
// holds s.mu.
func (s *Server) serveCatalog(set *disclosure.Set) {
	rt := &routes{exact: map[string]route{}, prompts: map[string]route{}, byTemplate: map[string]route{}}
	s.ext.catalogNames = nil
	s.servePrompts(set, rt)
	// Resources and templates, under their own URIs where they can.
	servers := map[string]bool{}
	count, tcount := idCounts(s.ext.resources, servers), idCounts(s.ext.templates, servers)
	if len(servers) == 1 {
		for k := range servers {
			rt.only = k
		}
	}
	s.serveResources(rt, count)
	s.serveTemplates(rt, tcount)
	s.ext.routes.Store(rt)
}

// servePrompts serves the servers' prompts, named as tools are, and
// routes each back to its server's own name.
func (s *Server) servePrompts(set *disclosure.Set, rt *routes) {
	sv := &s.ext.served
	name := set.ServerPromptNamer()
	now := map[string]string{}
	for _, it := range s.ext.prompts {
		p := &mcp.Prompt{}
		if json.Unmarshal(it.Raw, p) != nil || p.Name == "" {
			continue
		}
		title := p.Title
		if title == "" {
			title = p.Name
		}
		own := p.Name
		served, refused := name(it.Spec.Extension, it.Spec.Label(), own)
		if refused != nil {
			s.refuseName(&s.ext.catalogNames, *refused)
			continue
		}
		p.Name = served
		p.Title = extmcp.Printable(it.Spec.Extension + ": " + title)
		p.Description = strings.TrimSpace(p.Description + fmt.Sprintf("\n\nFrom the extension %s (its MCP server %s).", it.Spec.Extension, it.Spec.Label()))
		rt.prompts[p.Name] = route{it.Spec.Key(), own}
		b, _ := json.Marshal(p)
		now[p.Name] = string(b)
		if sv.prompts[p.Name] != string(b) {
			s.mcp.AddPrompt(p, s.getPrompt(it.Spec.Key(), own))
		}
	}
	if gone := missing(sv.prompts, now); len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	sv.prompts = now
}

// idCounts counts how many of items have each ID (one listed more than
// once is served qualified), and notes in servers each server that lists
// one (with one server only, a URI it did not list is its).
func idCounts(items []extmcp.Item, servers map[string]bool) map[string]int {
	n := map[string]int{}
	for _, it := range items {
		n[it.ID]++
		servers[it.Spec.Key()] = true
	}
	return n
}

// servedURI is the URI (or template) it is served under: its own, or
// qualified when n counts it more than once. One in gemkit's
// own schemes (gemkit-doc, gemkit-mcp) is refused (""): read, it would
// reach gemkit's doc or another server.
func (s *Server) servedURI(it extmcp.Item, n map[string]int, kind string) string {
	if owner, ok := disclosure.ReservedBy(it.ID); ok {
		s.refuseName(&s.ext.catalogNames, disclosure.NameRefusal{Extension: it.Spec.Extension, Server: it.Spec.Server, Kind: kind, Own: it.ID, Name: it.ID, Owner: owner})
		return ""
	}
	if n[it.ID] > 1 {
		return qualified(it.Spec, it.ID)
	}
	return it.ID
}

// serveResources serves the servers' resources, count being how often
// each URI is listed, and routes each to its server.
func (s *Server) serveResources(rt *routes, count map[string]int) {
	sv := &s.ext.served
	now := map[string]string{}
	for _, it := range s.ext.resources {
		r := &mcp.Resource{}
		if json.Unmarshal(it.Raw, r) != nil {
			continue
		}
		if r.URI = s.servedURI(it, count, "resource"); r.URI == "" {
			continue
		}
		if _, err := url.Parse(r.URI); err != nil {
			s.log.Warn("an extension's MCP server lists a resource whose URI is not a URI; it is not served", "extension", it.Spec.Extension, "server", it.Spec.Server, "uri", it.ID)
			continue
		}
		if _, dup := now[r.URI]; dup {
			continue
		}
		rt.exact[r.URI] = route{it.Spec.Key(), it.ID}
		b, _ := json.Marshal(r)
		now[r.URI] = string(b)
		if sv.resources[r.URI] != string(b) {
			s.mcp.AddResource(r, s.readServerResource)
		}
	}
	if gone := missing(sv.resources, now); len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	sv.resources = now
}

// serveTemplates serves the servers' resource templates, tcount being
// how often each is listed, and routes what matches each (as served
// and as the server's own) to its server.
func (s *Server) serveTemplates(rt *routes, tcount map[string]int) {
	sv := &s.ext.served
	now := map[string]string{}
	for _, it := range s.ext.templates {
		t := &mcp.ResourceTemplate{}
		if json.Unmarshal(it.Raw, t) != nil {
			continue
		}
		tmpl, err := uritemplate.New(it.ID)
		if err != nil {
			s.log.Warn("an extension's MCP server lists a resource template that is not a URI template; it is not served", "extension", it.Spec.Extension, "server", it.Spec.Server, "template", it.ID)
			continue
		}
		if t.URITemplate = s.servedURI(it, tcount, "resource template"); t.URITemplate == "" {
			continue
		}
		stmpl, err := uritemplate.New(t.URITemplate)
		if err != nil {
			continue
		}
		if _, dup := now[t.URITemplate]; dup {
			continue
		}
		rt.templates = append(rt.templates, templateRoute{it.Spec.Key(), sync.OnceValue(tmpl.Regexp), sync.OnceValue(stmpl.Regexp)})
		rt.byTemplate[t.URITemplate] = route{it.Spec.Key(), it.ID}
		b, _ := json.Marshal(t)
		now[t.URITemplate] = string(b)
		if sv.templates[t.URITemplate] != string(b) {
			s.mcp.AddResourceTemplate(t, s.readServerResource)
		}
	}
	if gone := missing(sv.templates, now); len(gone) > 0 {
		s.mcp.RemoveResourceTemplates(gone...)
	}
	sv.templates = now
}

// readUnlisted reads a server's URI the SDK has no handler for (a
// qualified one, one a server handed back without listing it), as the
// SDK answers a read: with the caching hints of every result, and the
// resultType of the revisions from 2026-07-28 on when the client speaks
// one of them.
func (s *Server) readUnlisted(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := s.readServerResource(ctx, req)
	if err != nil {
		return nil, err
	}
	cacheable(ctx, req, &res.Cacheable)
	if p := req.Session.InitializeParams(); p != nil && !mcpwire.IsStateless(p.ProtocolVersion) {
		return res, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	fields["resultType"] = json.RawMessage(`"complete"`)
	b, _ = json.Marshal(fields)
	out := &mcp.ReadResourceResult{}
	return out, json.Unmarshal(b, out)
}

// missing are the keys of was that now has not.
func missing(was, now map[string]string) []string {
	var gone []string
	for k := range was {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	return gone
}

// getPrompt passes prompts/get on to the prompt own of the server key.
func (s *Server) getPrompt(key, own string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		raw, err := s.cfg.Servers.GetPrompt(ctx, key, own, req.Params.Arguments)
		if err != nil {
			s.log.Warn("an extension's MCP server failed prompts/get", "prompt", req.Params.Name, "err", err)
			return nil, err
		}
		res := &mcp.GetPromptResult{}
		if err := json.Unmarshal(raw, res); err != nil {
			return nil, fmt.Errorf("the answer to prompts/get of %s cannot be read: %w", req.Params.Name, err)
		}
		return res, nil
	}
}

// isServerURI reports whether uri is read from a server rather than
// from the extensions' docs.
func isServerURI(uri string) bool {
	return !strings.HasPrefix(uri, DocScheme+"://")
}

// readServerResource passes resources/read on to the server the URI
// belongs to (routes.resolve): the SDK's handler of the servers' listed
// resources and templates, and what the receiving middleware calls for
// a server's URI the SDK does not know (readUnlisted).
func (s *Server) readServerResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rt := s.ext.routes.Load()
	if rt == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	r, err := rt.resolve(uri)
	if err != nil {
		return nil, err
	}
	raw, err := s.cfg.Servers.ReadResource(ctx, r.key, r.uri)
	if err != nil {
		s.log.Warn("an extension's MCP server failed resources/read", "uri", uri, "err", err)
		return nil, err
	}
	res := &mcp.ReadResourceResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("the answer to resources/read of %s cannot be read: %w", uri, err)
	}
	return res, nil
}
