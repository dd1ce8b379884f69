// Package mcpserver serves the extensions' executable tools and docs over
// the Model Context Protocol: `gemkit mcp`. What it serves comes from
// internal/disclosure (the tools with their schemas, read_doc, the docs as
// resources, the summary as the server's instructions) and every call
// goes through internal/toolrun, with the sandbox, limits and consent of
// `gemkit extensions run`. The MCP library, the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), stays inside this package.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// Name is the server's name in its initialize answer.
const Name = "gemkit"

// DefaultPollInterval is how often the server looks for changed
// extensions.
const DefaultPollInterval = time.Second

// DefaultProgressInterval is how often a running call reports progress to
// a client that sent a progressToken.
const DefaultProgressInterval = 5 * time.Second

// Config says what a Server serves and how.
type Config struct {
	// Source is where the extensions come from.
	Source disclosure.Source
	// Runner runs the tools. With Ask as its Asker, a tool without
	// recorded consent asks the person through the client when the
	// client offers elicitation (consent.go); with none, or where the
	// client cannot answer, it is refused with words saying how to
	// grant it.
	Runner *toolrun.Runner
	// Limits bound each call.
	Limits disclosure.Limits
	// Budget is the summary's budget in characters; 0 is the default.
	Budget int
	// Version is gemkit's version, reported to clients.
	Version string
	// PollInterval is how often Watch stats the extension files; 0 is
	// DefaultPollInterval.
	PollInterval time.Duration
	// ProgressInterval is how often a call reports progress when the
	// client asked for it; 0 is DefaultProgressInterval.
	ProgressInterval time.Duration
	// Logger receives what happens; nil is slog.Default().
	Logger *slog.Logger
	// CodeIntel, when set, adds the code-intelligence tools
	// (code_definition, code_references, …) beside the extensions'. No
	// extension's tool takes a name of theirs (disclosure.ReservedBy).
	CodeIntel *codeintel.Tools
	// Servers, when set, runs the enabled extensions' own stdio MCP
	// servers in the sandbox (extservers.go); their tools are served
	// beside the extensions' tools from the first tools/list on.
	Servers *extmcp.Manager
	// HTTPLimits bound the clients of ServeHTTP (timeouts, unauthenticated
	// connections); zero fields take httpguard's defaults, and MaxBody is
	// always MaxRequestBody.
	HTTPLimits httpguard.Limits
	// ChooseServers says which extensions' servers Servers runs, and
	// with what widening (extmcp.Choose); nil: every enabled one's,
	// under the default profile.
	ChooseServers extmcp.Choose
	// UnservedServers, when set, are the servers switched to gemkit that
	// it does not serve for a set, with why (extmcp.Policy.Unserved):
	// each is served as a placeholder tool that says so.
	UnservedServers func(set *disclosure.Set, specs []extmcp.Spec, skipped []extmcp.Skipped) []extmcp.Skipped
}

// Server is an MCP server of one Source. It reloads when the Source's
// files change (Watch), telling clients with notifications/tools/list_changed
// and notifications/resources/list_changed.
type Server struct {
	cfg Config
	log *slog.Logger
	mcp *mcp.Server

	set          atomic.Pointer[disclosure.Set]
	instructions atomic.Pointer[string]                 // the summary of set
	toolsList    atomic.Pointer[json.RawMessage]        // the encoded tools/list result
	serverRoutes atomic.Pointer[map[string]serverRoute] // the served tools of extensions' servers, for fastCall
	fastTaken    atomic.Int64                           // the tools/call requests fastCall took, for the log and tests

	active sessionActivity // of the Streamable HTTP sessions

	mu        sync.Mutex // serialises reloads
	stamp     string
	sig       string               // the served tool list and resources, to skip no-op reloads
	tools     map[string]*mcp.Tool // the tools served, by name
	resources []string             // the URIs of the resources served

	ext extState // the extensions' own servers' tools (extservers.go)
	// parked are the calls of the extensions' servers whose question
	// went to a client of 2026-07-28 (extpark.go).
	parked parkedCalls
}

// New loads the Source and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil || cfg.Runner == nil {
		return nil, errors.New("mcpserver: Source and Runner are required")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	opts := &mcp.ServerOptions{
		Logger: sdkLogger(s.log),
		// Tools and resources, both announcing changes. Without the
		// extensions' own servers: no prompts, no logging, no
		// subscriptions to a resource (a doc changes only with its
		// extension, which list_changed tells).
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
		// One page: the list is encoded once per reload (fastlist.go) and a
		// client gets it in one answer, as it always did.
		PageSize:     maxPage,
		SetCacheable: cacheable,
	}
	// With the extensions' own servers, what they may offer.
	s.offerServers(opts)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: Name, Version: cfg.Version}, opts)
	s.mcp.AddSendingMiddleware(s.quietNotifications)
	// Outermost, a message out of the session's order is refused, and
	// the answer to initialize or server/discover gets the instructions
	// (session.go); within, the extensions' servers start at the first
	// use of a list, not at initialize (extservers.go).
	s.mcp.AddReceivingMiddleware(s.handshake, s.serversMiddleware)
	if err := s.Reload(); err != nil {
		return nil, err
	}
	s.log.Debug("serving", "source", cfg.Source.Describe(), "tools", len(s.Set().Tools()), "docs", len(s.Set().DocRefs()))
	return s, nil
}

// Set is the Set being served.
func (s *Server) Set() *disclosure.Set { return s.set.Load() }

// Instructions is the summary of the Set being served.
func (s *Server) Instructions() string { return *s.instructions.Load() }

// Reload loads the Source afresh and, when the tools or docs changed,
// replaces them (which notifies the clients). A load that fails keeps
// serving the last good Set.
func (s *Server) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloadLocked()
}

func (s *Server) reloadLocked() error {
	// The stamp is taken before loading, so a change made during the load
	// is seen by the next Watch tick. It covers the linked folders of the
	// previous set only: when a new linked extension appears, the next
	// tick stamps differently and reloads once more, which changes nothing
	// the clients see. The first load takes no stamp at all (it is on the
	// path from start to the first answer): the first tick reloads once.
	s.stamp = ""
	if last := s.set.Load(); last != nil {
		s.stamp = s.cfg.Source.Stamp(last)
	}
	set, err := s.cfg.Source.Load()
	if set == nil {
		if s.set.Load() == nil {
			return err // it names the folder it could not read
		}
		s.log.Warn("extensions could not be reloaded; serving the previous ones", "err", err)
		return nil
	}
	if err != nil {
		s.log.Warn("extensions loaded with a problem", "err", err)
	}
	// The summary is independent of the MCP tool list: make it on the
	// other core meanwhile (this is on the path from start to the first
	// answer).
	summary := make(chan string, 1)
	go func() { summary <- set.Summary(s.cfg.Budget).Text }()
	s.syncServers(set)
	tools, resources, list, sig := s.build(set)
	first := s.set.Load() == nil
	changed := first || sig != s.sig
	// The set goes first, so a client that hears of a new tool finds it.
	s.set.Store(set)
	if changed {
		s.sig = sig
		s.ext.quiet.Store(false)
		s.replace(tools, resources)
		s.toolsList.Store(&list)
	}
	text := <-summary
	if s.cfg.CodeIntel != nil {
		text = strings.TrimSpace(text + "\n\n" + codeintel.Instructions)
	}
	s.instructions.Store(&text)
	if changed && !first {
		s.log.Info("extensions changed; clients notified", "tools", len(tools)-1, "docs", len(resources))
	}
	return nil
}

// Watch reloads whenever the Source's stamp changes, until ctx ends.
func (s *Server) Watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.cfg.Source.Stamp(s.set.Load()) != s.stamp {
			if err := s.reloadLocked(); err != nil {
				s.log.Warn("reload", "err", err)
			}
		}
		s.mu.Unlock()
	}
}

// served is a tool with its handler, as build makes it.
type served struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
	// route is where the calls of a tool of an extension's own server
	// go, for the stdio fast path (fastcall.go); nil for other tools.
	route *serverRoute
}

// resource is a resource as build makes it.
type resource = *mcp.Resource

// maxPage is the page size of every list: all of it in one page.
const maxPage = 1 << 30

// replace serves tools and resources instead of those served so far. The
// SDK announces each change to the clients once, after the last of them
// (it waits 10 ms for more). New ones go in before old ones go out, so a
// client listing meanwhile never misses a tool that stays; a tool that
// did not change is left as it is (the SDK checks every tool it is given
// by encoding and decoding its schemas, most of what a reload of 250
// tools costs).
func (s *Server) replace(tools []served, resources []resource) {
	now := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		now[t.tool.Name] = t.tool
		if old := s.tools[t.tool.Name]; old == nil || !sameTool(old, t.tool) {
			s.mcp.AddTool(t.tool, t.handler)
		}
	}
	var gone []string
	for n := range s.tools {
		if now[n] == nil {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	s.tools = now
	routes := map[string]serverRoute{}
	for _, t := range tools {
		if t.route != nil {
			routes[t.tool.Name] = *t.route
		}
	}
	s.serverRoutes.Store(&routes)

	keep := make(map[string]bool, len(resources))
	uris := make([]string, 0, len(resources))
	for _, r := range resources {
		s.mcp.AddResource(r, s.readResource)
		keep[r.URI] = true
		uris = append(uris, r.URI)
	}
	gone = gone[:0]
	for _, u := range s.resources {
		if !keep[u] {
			gone = append(gone, u)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	s.resources = uris
}

// build turns a Set into MCP tools and resources, with the encoded
// tools/list result and a signature of everything a client sees of them.
func (s *Server) build(set *disclosure.Set) ([]served, []resource, json.RawMessage, string) {
	var sig strings.Builder
	tools := make([]served, 0, len(set.Tools())+1)
	rd := &mcp.Tool{
		Name:        disclosure.ReadDocTool,
		Description: disclosure.ReadDocDescription,
		InputSchema: disclosure.SchemaJSON(disclosure.ReadDocSchema()),
		Annotations: &mcp.ToolAnnotations{Title: "Read an extension's doc or skill", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
	tools = append(tools, served{tool: rd, handler: s.callTool})
	if ci := s.cfg.CodeIntel; ci != nil {
		for _, d := range ci.Decls() {
			schema, _ := json.Marshal(d.Schema)
			tools = append(tools, served{&mcp.Tool{
				Name:        d.Name,
				Description: d.Description,
				InputSchema: json.RawMessage(schema),
				Annotations: &mcp.ToolAnnotations{Title: d.Title, ReadOnlyHint: true, OpenWorldHint: ptr(false)},
			}, s.callCodeIntel, nil})
		}
	}
	// An extension's tool never takes a name of gemkit's own (the Set
	// leaves it out: disclosure.ReservedBy), whether or not gemkit
	// serves it here.
	for _, r := range set.Refused() {
		if w := r.String(); s.ext.told == nil || !s.ext.told[w] {
			if s.ext.told == nil {
				s.ext.told = map[string]bool{}
			}
			s.ext.told[w] = true
			s.log.Warn(w)
		}
	}
	for _, t := range set.Tools() {
		// Hints for clients that ask before running a tool that writes or
		// reaches the network.
		m := set.Extension(t.Extension).Ext.Manifest
		p := m.EffectivePermissions()
		readOnly, openWorld := p.Filesystem.Write == extension.AccessNone, len(p.Network.AllowedHosts) > 0
		mt := &mcp.Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: disclosure.SchemaJSON(t.InputSchema),
			Annotations: &mcp.ToolAnnotations{Title: t.Extension + ": " + t.Tool, ReadOnlyHint: readOnly, OpenWorldHint: ptr(openWorld)},
		}
		if t.Output == string(extension.OutputJSON) {
			mt.OutputSchema = outputSchema
			if d := m.Tool(t.Tool); d != nil && d.OutputSchema != nil {
				mt.OutputSchema = d.OutputSchema
			}
		}
		tools = append(tools, served{tool: mt, handler: s.callTool})
	}
	tools = append(tools, s.serverTools(set)...)
	list := encodeToolsList(tools)
	sig.Write(list)
	var resources []resource
	for _, d := range set.DocRefs() {
		uri := DocURI(d.Extension, d.Name)
		resources = append(resources, &mcp.Resource{URI: uri, Name: d.Extension + "/" + d.Name, Description: d.Description, MIMEType: d.MIMEType})
		fmt.Fprintf(&sig, "\ndoc %s %s %s", uri, d.Description, d.MIMEType)
	}
	return tools, resources, list, sig.String()
}

func ptr[T any](v T) *T { return &v }

// sameTool reports whether a and b, both made by build, are listed alike.
func sameTool(a, b *mcp.Tool) bool {
	raw := func(v any) []byte {
		r, _ := v.(json.RawMessage)
		return r
	}
	x, y := *a.Annotations, *b.Annotations
	if (x.OpenWorldHint == nil) != (y.OpenWorldHint == nil) || x.OpenWorldHint != nil && *x.OpenWorldHint != *y.OpenWorldHint {
		return false
	}
	x.OpenWorldHint, y.OpenWorldHint = nil, nil
	return a.Name == b.Name && a.Description == b.Description && x == y && a.Meta[searchHintKey] == b.Meta[searchHintKey] &&
		bytes.Equal(raw(a.InputSchema), raw(b.InputSchema)) && bytes.Equal(raw(a.OutputSchema), raw(b.OutputSchema)) &&
		(a.OutputSchema == nil) == (b.OutputSchema == nil)
}

// sdkLogger is the logger the SDK gets: log's warnings and errors only.
// The SDK reports every session's start and end at Info, which on
// stderr a client would show as the server's complaints.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(warnOnly{log.Handler()})
}

type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }

func (h warnOnly) WithGroup(g string) slog.Handler { return warnOnly{h.Handler.WithGroup(g)} }
