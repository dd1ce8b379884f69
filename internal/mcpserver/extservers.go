package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/jsontext"
)

// The extensions' own MCP servers (Config.Servers), stdio ones in the
// sandbox and remote ones as they are, are started by extmcp at the
// first use of a list of a client's (tools/list or tools/call,
// prompts/list or prompts/get, resources/list, resources/templates/list
// or resources/read, completion/complete: never at initialize, so a
// client that only connects starts nothing). Their tools are served beside the
// extensions' tools, under names made by the same rule
// (disclosure.Set.ServerToolNamer), and a call is passed on to the
// server, bounded by its timeout; their prompts and resources likewise
// (extfeatures.go), and their notifications passed on (extevents.go).

// extState is what the Server knows of the extensions' servers.
type extState struct {
	listMu sync.Mutex  // serialises listings
	listed atomic.Bool // the servers of the current set were listed
	// asked: a client listed or called tools, so the servers may start;
	// failed: a server could not start or list at the last listing (no
	// consent, among others), so a reload lists them again.
	asked, failed atomic.Bool
	// everListed: the servers were listed once; under s.mu.
	everListed bool
	// quiet: the last change of the lists was the first listing, made
	// while a client's request waited for it, so that every client that
	// ever got a list got one with the servers' entries: the
	// list_changed notifications the SDK sends for it tell nobody
	// anything, and are not sent (quietNotifications).
	quiet atomic.Bool
	// tools, prompts, resources and templates are the servers' as last
	// listed; s.mu guards them.
	tools                         []extmcp.Tool
	prompts, resources, templates []extmcp.Item
	// failures are the servers that could not start or list at the last
	// listing, each served as a placeholder tool (unavailableTool) whose
	// description and answer say why, with the fix; s.mu guards them.
	failures []extmcp.Failure
	// served is what serveCatalog last handed the SDK; s.mu guards it.
	served catalogServed
	// routes take a resource's URI to its server (extfeatures.go).
	routes atomic.Pointer[routes]
	// subs are the clients' subscriptions to the servers' resources.
	subs subscriptions
	// toolNames and catalogNames are the servers' tools, and their
	// prompts and resources, refused for a name of gemkit's own, as last
	// served; s.mu guards them.
	toolNames, catalogNames []disclosure.NameRefusal
	// told are those refusals already logged, by their words.
	told map[string]bool
	// specs are the servers handed to the Manager, skipped those of the
	// set's extensions left out, with why; s.mu guards them. A call of
	// a name no tool has is mapped back to them (extunserved.go).
	specs   []extmcp.Spec
	skipped []extmcp.Skipped
	// unserved are the switched servers gemkit mcp does not serve
	// (Config.UnservedServers), each served as a placeholder
	// (unservedTool); s.mu guards them.
	unserved []extmcp.Skipped
}

// refuseName leaves out a server's item whose name is gemkit's own,
// telling it once in words naming both. The caller holds s.mu.
func (s *Server) refuseName(list *[]disclosure.NameRefusal, r disclosure.NameRefusal) {
	*list = append(*list, r)
	s.tellOnce(r.String())
}

// tellOnce logs w as a warning, once. The caller holds s.mu.
func (s *Server) tellOnce(w string) {
	if s.ext.told == nil {
		s.ext.told = map[string]bool{}
	}
	if !s.ext.told[w] {
		s.ext.told[w] = true
		s.log.Warn(w)
	}
}

// RefusedNames are the items of the set's tools and the servers' (as
// last listed) that are not served because their names are gemkit's
// own.
func (s *Server) RefusedNames() []disclosure.NameRefusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]disclosure.NameRefusal(nil), s.Set().Refused()...)
	out = append(out, s.ext.toolNames...)
	return append(out, s.ext.catalogNames...)
}

// syncServers hands the set's servers to the Manager; when they
// changed, they are listed again at the next use. The caller holds
// s.mu.
func (s *Server) syncServers(set *disclosure.Set) {
	if s.cfg.Servers == nil {
		s.ext.listed.Store(true)
		return
	}
	specs, skipped := extmcp.Specs(set, s.cfg.ChooseServers)
	for _, k := range skipped {
		s.log.Debug("an extension's MCP server is not served by gemkit", "extension", k.Extension, "server", k.Server, "why", k.Reason)
	}
	s.ext.specs, s.ext.skipped = specs, skipped
	s.ext.unserved = nil
	if s.cfg.UnservedServers != nil {
		s.ext.unserved = s.cfg.UnservedServers(set, specs, skipped)
	}
	for _, u := range s.ext.unserved {
		s.tellOnce(fmt.Sprintf("extension %s's MCP server %s is switched to gemkit, and gemkit mcp does not serve it: %s", extmcp.Printable(u.Extension), extmcp.Printable(u.Server), u.Reason))
	}
	changed := s.cfg.Servers.Sync(specs)
	if changed {
		s.ext.quiet.Store(false)
		now := make(map[string]extmcp.Spec, len(specs))
		for _, sp := range specs {
			now[sp.Key()] = sp
		}
		s.ext.tools = keepListed(s.ext.tools, func(t *extmcp.Tool) *extmcp.Spec { return &t.Spec }, now)
		s.ext.prompts = keepListed(s.ext.prompts, itemSpec, now)
		s.ext.resources = keepListed(s.ext.resources, itemSpec, now)
		s.ext.templates = keepListed(s.ext.templates, itemSpec, now)
		s.ext.failures = keepListed(s.ext.failures, func(f *extmcp.Failure) *extmcp.Spec { return &f.Spec }, now)
		s.serveCatalog(set)
	}
	if changed || s.ext.failed.Load() {
		s.ext.listed.Store(false)
	}
	if len(specs) == 0 {
		s.ext.listed.Store(true)
		return
	}
	// A client that listed once hears of the servers' tools without
	// asking: a switch made, or consent given, while it is connected
	// shows, and list_changed tells it.
	if !s.ext.listed.Load() && s.ext.asked.Load() {
		go s.listServers(context.Background(), false)
	}
}

// keepListed keeps, of what the servers listed last, the entries of the
// servers that are still served (now, by key), each with its new spec,
// until they are listed again. A server restarted by a change of its
// spec (a widening, a new consent) keeps its tools meanwhile: a client
// that listed before the change calls one and reaches the restarted
// server, which starts for the call, where the tool would otherwise be
// unknown until the listing after the restart (and a client that lists
// only when told list_changed would see it vanish). A tool the new
// server no longer has is answered by that server, and the next listing
// takes it out. The entries of servers no longer served go at once.
func keepListed[T any](items []T, spec func(*T) *extmcp.Spec, now map[string]extmcp.Spec) []T {
	out := items[:0:0]
	for _, it := range items {
		sp := spec(&it)
		if n, ok := now[sp.Key()]; ok {
			*sp = n
			out = append(out, it)
		}
	}
	return out
}

func itemSpec(it *extmcp.Item) *extmcp.Spec { return &it.Spec }

// serversListed reports whether the tool list holds the servers' tools.
func (s *Server) serversListed() bool { return s.ext.listed.Load() }

// listServers lists what the servers offer when they were not listed
// yet (or one said a list of its changed), and serves it. A server that
// cannot start or list is reported in the log, in words, and adds
// nothing; the others are served. request says a client's request waits
// for the listing (and gets its answer from what it lists).
func (s *Server) listServers(ctx context.Context, request bool) {
	s.ext.asked.Store(true)
	if s.ext.listed.Load() {
		return
	}
	s.ext.listMu.Lock()
	defer s.ext.listMu.Unlock()
	if s.ext.listed.Load() {
		return
	}
	c, failed := s.cfg.Servers.Catalog(ctx)
	// A start or listing cut short because what waited for it went (the
	// client left, gemkit mcp is ending) is no failure of the server's:
	// a person who ran a client by hand saw a warning for each server
	// still starting when it quit.
	for _, f := range failed {
		level := slog.LevelWarn
		if errors.Is(f.Err, extmcp.ErrStopped) {
			level = slog.LevelDebug
		}
		s.log.Log(ctx, level, f.Err.Error())
	}
	s.ext.failed.Store(len(failed) > 0)
	slices.SortFunc(failed, func(a, b extmcp.Failure) int { return strings.Compare(a.Spec.Key(), b.Spec.Key()) })
	slices.SortFunc(c.Tools, func(a, b extmcp.Tool) int {
		return strings.Compare(a.Spec.Key()+"\x00"+a.Name, b.Spec.Key()+"\x00"+b.Name)
	})
	for _, items := range [][]extmcp.Item{c.Prompts, c.Resources, c.Templates} {
		slices.SortFunc(items, func(a, b extmcp.Item) int {
			return strings.Compare(a.Spec.Key()+"\x00"+a.ID, b.Spec.Key()+"\x00"+b.ID)
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ext.tools, s.ext.prompts, s.ext.resources, s.ext.templates = c.Tools, c.Prompts, c.Resources, c.Templates
	s.ext.failures = failed
	s.ext.quiet.Store(request && !s.ext.everListed)
	s.ext.everListed = true
	set := s.set.Load()
	served, resources, list, sig := s.build(set)
	if sig != s.sig {
		s.sig = sig
		s.replace(served, resources)
		s.toolsList.Store(&list)
	}
	s.serveCatalog(set)
	// Listed only now: a request that finds the servers listed is
	// answered from the SDK's tools at once, and the SDK takes them one
	// by one above. Set before, it let a client's list (Claude Code
	// 2.1.330 sends several at once) see a few of a server's tools or
	// none, and the first listing's changes are told to nobody (quiet).
	s.ext.listed.Store(true)
}

// serverTools are the servers' tools as served, and a placeholder for
// each server that could not start or list. The caller holds s.mu.
func (s *Server) serverTools(set *disclosure.Set) []served {
	s.ext.toolNames = nil
	if len(s.ext.tools) == 0 && len(s.ext.failures) == 0 && len(s.ext.unserved) == 0 {
		return nil
	}
	name := set.ServerToolNamer()
	out := make([]served, 0, len(s.ext.tools)+len(s.ext.failures))
	for _, t := range s.ext.tools {
		if !objectSchema(t.InputSchema) {
			s.log.Warn("an extension's MCP server lists a tool whose input schema is not a JSON Schema of an object; it is not served",
				"extension", t.Spec.Extension, "server", t.Spec.Server, "tool", t.Name)
			continue
		}
		ann := &mcp.ToolAnnotations{}
		if len(t.Annotations) > 0 {
			_ = json.Unmarshal(t.Annotations, ann)
		}
		title := t.Title
		if title == "" {
			title = ann.Title
		}
		if title == "" {
			title = t.Name
		}
		ann.Title = extmcp.Printable(t.Spec.Extension + ": " + title)
		where := "in gemkit's sandbox"
		if t.Spec.Remote() {
			where = "a remote one, which gemkit connects to, not sandboxed"
		}
		exposed, refused := name(t.Spec.Extension, t.Spec.Label(), t.Name)
		if refused != nil {
			s.refuseName(&s.ext.toolNames, *refused)
			continue
		}
		mt := &mcp.Tool{
			Meta: serverToolHint(exposed, t.Spec.Extension, t.Spec.Server, t.Name, title),
			Name: exposed,
			Description: strings.TrimSpace(cutDescription(t.Description) + fmt.Sprintf("\n\nFrom the extension %s (its %s, %s).",
				t.Spec.Extension, serverWords(t.Spec), where)),
			InputSchema: t.InputSchema,
			Annotations: ann,
		}
		if len(t.OutputSchema) > 0 {
			mt.OutputSchema = t.OutputSchema
		}
		out = append(out, served{tool: mt, handler: s.callServer(t.Spec.Key(), t.Name), route: &serverRoute{key: t.Spec.Key(), tool: t.Name}})
	}
	for _, f := range s.ext.failures {
		exposed, refused := name(f.Spec.Extension, f.Spec.Label(), f.Spec.Server+"_unavailable")
		if refused != nil {
			s.refuseName(&s.ext.toolNames, *refused)
			continue
		}
		out = append(out, s.unavailableTool(exposed, f))
	}
	for _, u := range s.ext.unserved {
		exposed, refused := name(u.Extension, u.Server, u.Server+"_unavailable")
		if refused != nil {
			s.refuseName(&s.ext.toolNames, *refused)
			continue
		}
		out = append(out, s.unservedTool(exposed, u))
	}
	return out
}

// unservedTool is the placeholder of a server switched to gemkit that
// gemkit mcp does not serve (u, Config.UnservedServers): Gemini CLI no
// longer starts it either, so without it the agent would find nothing
// of the server. Its description and its answer say why and what to
// do; it goes once the server is served (the set is loaded again when
// the extension or the switch changes).
func (s *Server) unservedTool(name string, u extmcp.Skipped) served {
	words := func(u extmcp.Skipped) string {
		return fmt.Sprintf("the MCP server %s of the extension %s is switched to gemkit (Gemini CLI does not start it), and gemkit mcp does not serve it, so its tools are not offered. Why, and what to do: %s.%s",
			extmcp.Printable(u.Server), extmcp.Printable(u.Extension), strings.TrimSuffix(extmcp.Printable(u.Reason), "."), forThePerson)
	}
	t := &mcp.Tool{
		Name:        name,
		Description: "Not a tool: " + words(u) + "\n\nCalling this tool says it again.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Annotations: &mcp.ToolAnnotations{Title: extmcp.Printable(u.Extension + ": " + u.Server + " is not served"), ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
	return served{tool: t, handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, now := range s.ext.unserved {
			if now.Extension == u.Extension && now.Server == u.Server {
				return textResult("Not served: "+words(now), true), nil
			}
		}
		return textResult(fmt.Sprintf("The MCP server %s of the extension %s is served now. The list of tools changed: list them again to call its tools.",
			extmcp.Printable(u.Server), extmcp.Printable(u.Extension)), false), nil
	}}
}

// cutDescription is a switched server's tool description as served: at
// most extension.MaxDescription characters, the bound of a manifest
// tool's, and past it cut with a marker saying so. Gemini CLI passes a
// server's descriptions on whole; gemkit mcp serves these itself, to
// every client, and the model gets each with every request, so a server
// that lists a 100,000-character description (by mistake, or to crowd
// the context) costs every request that much. No real server comes near
// the bound (the longest measured is 3,629 characters; MaxDescription),
// so the cut changes none, and the input schema, which the call needs,
// is served whole.
func cutDescription(d string) string {
	n := utf8.RuneCountInString(d)
	if n <= extension.MaxDescription {
		return d
	}
	k := 0
	for i := range d {
		if k == extension.MaxDescription {
			d = d[:i]
			break
		}
		k++
	}
	return d + fmt.Sprintf(" … [cut by gemkit: the server's description is %d characters, past the %d gemkit serves]", n, extension.MaxDescription)
}

// serverWords name spec's server in a tool's description: the
// manifest's, or an agent's, which the switch serves to the main agent.
func serverWords(spec extmcp.Spec) string {
	if spec.Agent != "" {
		return "agent " + spec.Agent + "'s MCP server " + spec.Server + ", served here in place of the one Gemini CLI would start for the agent"
	}
	return "MCP server " + spec.Server
}

// unavailableTool is the placeholder of a server that could not start
// or list (f): a client that lists tools gets it in the server's place,
// so that neither the model nor the person (Gemini CLI's /mcp, Claude
// Code's /mcp show a tool's description) is left with tools that
// silently vanished. Its description says why and what to do; a call
// lists the servers again, and answers with the server's tools once it
// starts, else with why it still does not, as a tool error.
func (s *Server) unavailableTool(name string, f extmcp.Failure) served {
	why := extmcp.Printable(f.Err.Error())
	t := &mcp.Tool{
		Name: name,
		Description: fmt.Sprintf("Not a tool: the %s of the extension %s, which gemkit serves in its sandbox, is not running, so its tools are not offered. Why, and what to do: %s.%s\n\nCalling this tool tries to start the server again and says what happened.",
			extmcp.Printable(serverWords(f.Spec)), extmcp.Printable(f.Spec.Extension), strings.TrimSuffix(why, "."), forThePerson),
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Annotations: &mcp.ToolAnnotations{Title: extmcp.Printable(f.Spec.Extension + ": " + f.Spec.Server + " is not running"), ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
	key := f.Spec.Key()
	return served{tool: t, handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.ext.listed.Store(false)
		s.listServers(ctx, true)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, f := range s.ext.failures {
			if f.Spec.Key() == key {
				return textResult(strings.TrimSuffix(extmcp.Printable(f.Err.Error()), ".")+"."+forThePerson, true), nil
			}
		}
		var names []string
		set := s.set.Load()
		namer := set.ServerToolNamer()
		for _, t := range s.ext.tools {
			n, refused := namer(t.Spec.Extension, t.Spec.Label(), t.Name)
			if t.Spec.Key() == key && refused == nil {
				names = append(names, n)
			}
		}
		return textResult(fmt.Sprintf("The MCP server %s of the extension %s started now; its tools are %s. The list of tools changed: list them again to call them.",
			extmcp.Printable(f.Spec.Server), extmcp.Printable(f.Spec.Extension), strings.Join(names, ", ")), false), nil
	}}
}

// callServer passes a call on to tool of the server key; the server's
// questions go to the call's client (extask.go).
func (s *Server) callServer(key, tool string) mcp.ToolHandler {
	route := serverRoute{key: key, tool: tool}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.askingCall(ctx, req, route, s.progressFor(ctx, req)), nil
	}
}

// progressFor sends a server's progress to the client of req under the
// client's own token; nil when req has none.
func (s *Server) progressFor(ctx context.Context, req *mcp.CallToolRequest) extmcp.Progress {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(p, total float64, msg string) {
		// It may come just after the result, when ctx has ended.
		err := req.Session.NotifyProgress(context.WithoutCancel(ctx), &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: total, Message: msg})
		if err != nil {
			s.log.Debug("progress notification", "err", err)
		}
	}
}

// callServerRoute calls the served tool name, which is route's, with
// args, for the SDK's handler (callServer) and the stdio fast path
// (fastcall.go) alike; a failure is a tool error the model reads.
func (s *Server) callServerRoute(ctx context.Context, name string, route serverRoute, args json.RawMessage, progress extmcp.Progress) (res *mcp.CallToolResult) {
	var err error
	defer s.recovered(name, &res, &err)
	raw, err := s.cfg.Servers.Call(ctx, route.key, route.tool, args, progress)
	if err != nil {
		s.log.Warn("an extension's MCP server failed a call", "tool", name, "err", err)
		return textResult(err.Error(), true)
	}
	res = &mcp.CallToolResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return textResult(fmt.Sprintf("the answer of %s cannot be read: %v", name, err), true)
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // as the SDK sends it: not null
	}
	return res
}

// objectSchema reports whether schema is a JSON object whose "type" is
// "object", as the SDK's AddTool asks of an input schema. It reads the
// members of the top level only, in one pass that decodes nothing (the
// first list decoded each tool's whole schema into maps to look at one
// member: 0.23 ms of CPU at a cold start of server-everything, beside the
// start of the servers); text the pass leaves to a decoder (a name or
// the type with an escape, nesting deeper than it follows) is decoded.
func objectSchema(schema []byte) bool {
	c := jsontext.NewChecker(schema, 128)
	var typ []byte
	escaped := false
	ok := c.Members(func(key, value []byte) bool {
		if string(key) == "type" {
			typ = value
			escaped = bytes.IndexByte(value, '\\') >= 0
		}
		return true
	})
	if c.Space(); ok && c.End() && !escaped {
		return string(typ) == `"object"`
	}
	var m map[string]any
	return json.Unmarshal(schema, &m) == nil && m["type"] == "object"
}
