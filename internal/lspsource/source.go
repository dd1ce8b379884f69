// Package lspsource is gemkit's one code-intelligence Source: it asks a
// set of language clients through the editor protocol's language
// requests (lsp/clients, lsp/request, lsp/changed, lsp/unsaved and
// diagnostics/get, docs/editor-protocol.md), and turns their servers'
// answers, passed on as the servers sent them, into codeintel's types.
//
// Two sets of clients speak that protocol: an editor's own (Neovim's
// vim.lsp, Emacs's eglot and lsp-mode, Vim's ALE), reached through the
// gemkit companion that serves the workspace (Companion, found by a
// Finder), and gemkit's own language servers (internal/langserver's Pool
// answers the same requests), in this process or through the
// workspace's broker (internal/lspbroker forwards them unchanged). The
// Source asks the editor first, when one serves the workspace: its
// clients are warm and know the unsaved buffers; a question its editor
// has no client for, or whose server lacks the request, goes to
// gemkit's own.
package lspsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// Conn carries the language requests to a set of language clients:
// Call sends method with params and decodes the result into result (nil:
// the result is dropped). A failure of the set as a whole (it went
// away, it lends no clients) is a *codeintel.NoServerError; a request it
// refuses is a *jsonrpc.Error.
type Conn interface {
	Call(ctx context.Context, method string, params, result any) error
}

// Clients is one set of language clients the Source may ask.
type Clients struct {
	Conn Conn
	// Name says whose clients they are, in answers ("Neovim" makes
	// "Neovim's gopls"); "" for gemkit's own, named by their servers.
	Name string
	// Confined says that the servers run in gemkit's sandbox
	// (codeintel.Confined): gemkit's own do, an editor's do not.
	Confined bool
	// Unsaved says that the clients see texts of their own (the editor's
	// buffers): Changed gives them no text, which would replace a
	// person's, and the Source asks them for theirs (lsp/unsaved).
	Unsaved bool
	// Check, when set, says without asking whether a client serves a
	// file (nil) or why none does (a *codeintel.NoServerError): gemkit's
	// own servers start nothing for a file no server serves.
	Check func(path string) error
}

// Source is a codeintel.Source over the editor's clients, when one
// serves the workspace now, and gemkit's own. It is safe for concurrent
// use.
type Source struct {
	editor func(ctx context.Context) *Clients
	own    *Clients
}

var (
	_ codeintel.Source   = (*Source)(nil)
	_ codeintel.Unsaved  = (*Source)(nil)
	_ codeintel.Confined = (*Source)(nil)
	_ codeintel.Locator  = (*Source)(nil)
)

// New returns the Source that asks editor's clients first (editor is
// asked before each question, since an editor may start or quit while an
// agent works: a Finder's Find; nil for none) and then own (nil for
// none).
func New(editor func(ctx context.Context) *Clients, own *Clients) *Source {
	return &Source{editor: editor, own: own}
}

// sets are the clients to ask now, the editor's first.
func (s *Source) sets(ctx context.Context) []*Clients {
	var out []*Clients
	if s.editor != nil {
		if ed := s.editor(ctx); ed != nil {
			out = append(out, ed)
		}
	}
	if s.own != nil {
		out = append(out, s.own)
	}
	return out
}

// ask runs f on each set of clients in turn, until one can answer: a set
// that has no client for the file (a *codeintel.NoServerError) or whose
// server lacks the request (codeintel.ErrUnsupported) gives way to the
// next. path is the file the question is about ("" for none).
func ask[T any](ctx context.Context, s *Source, path string, f func(*Clients) (T, error)) (T, error) {
	var zero T
	var err error
	sets := s.sets(ctx)
	if len(sets) == 0 {
		return zero, &codeintel.NoServerError{Reason: "no language server can answer: no editor serves this workspace and gemkit's own servers are off"}
	}
	for i, cl := range sets {
		if cl.Check != nil && path != "" {
			if err = cl.Check(path); err != nil {
				continue
			}
		}
		var res T
		res, err = f(cl)
		if err == nil || i == len(sets)-1 || !(codeintel.IsNoServer(err) || errors.Is(err, codeintel.ErrUnsupported)) {
			return res, err
		}
	}
	return zero, err
}

// Confined implements codeintel.Confined: the answer to a question asked
// now comes from confined servers when no editor serves the workspace.
func (s *Source) Confined(ctx context.Context) bool {
	sets := s.sets(ctx)
	return len(sets) > 0 && sets[0].Confined
}

// call sends one request to cl, its errors in codeintel's terms.
func (cl *Clients) call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	err := cl.Conn.Call(ctx, method, params, result)
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
		if method == ide.MethodLSPClients || method == ide.MethodLSPRequest {
			return &codeintel.NoServerError{Reason: fmt.Sprintf("%s lends no language clients to gemkit (%s)", cl.owner(), je.Message)}
		}
		// A plugin that answers the questions but not this one.
		return fmt.Errorf("%s: %s: %w", cl.owner(), je.Message, codeintel.ErrUnsupported)
	}
	if errors.As(err, &je) {
		return fmt.Errorf("%s: %s", cl.owner(), je.Message)
	}
	return err
}

// owner names the set in messages.
func (cl *Clients) owner() string {
	if cl.Name == "" {
		return "gemkit's language servers"
	}
	return cl.Name
}

// serverName names a client in answers.
func (cl *Clients) serverName(client string) string {
	if cl.Name == "" {
		return client
	}
	return cl.Name + "'s " + client
}

// noClient is the answer for a file no client serves.
func (cl *Clients) noClient(path, reason string) error {
	if reason == "" {
		what := "this workspace"
		if path != "" {
			what = path
		}
		reason = fmt.Sprintf("%s has no language client for %s", cl.owner(), what)
	}
	return &codeintel.NoServerError{Path: path, Reason: reason}
}

// timeoutMS is how long the clients may take: what ctx leaves, less a
// margin for the answer to come back.
func timeoutMS(ctx context.Context) int {
	d := defaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl) - 300*time.Millisecond
	}
	return min(max(int(d/time.Millisecond), 1), ide.MaxLSPTimeout)
}

// request sends an LSP request to the clients serving path (all when "")
// or to the one named client; it returns their results and the client
// of each.
func (cl *Clients) request(ctx context.Context, path, client, method string, params any) ([]ide.LSPAnswer, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var res ide.LSPRequestResult
	p := ide.LSPRequestParams{Path: path, Client: client, Method: method, Params: raw, Timeout: timeoutMS(ctx)}
	if err := cl.call(ctx, ide.MethodLSPRequest, p, &res); err != nil {
		return nil, err
	}
	if len(res.Clients) == 0 {
		return nil, cl.noClient(path, res.Reason)
	}
	if len(res.Answers) == 0 {
		return nil, fmt.Errorf("%s: %w", cl.serverName(strings.Join(res.Clients, ", ")), codeintel.ErrUnsupported)
	}
	var ok []ide.LSPAnswer
	var errs []string
	for _, a := range res.Answers {
		if a.Error == nil {
			ok = append(ok, a)
			continue
		}
		if a.Error.Code == jsonrpc.CodeMethodNotFound && len(res.Answers) == 1 {
			return nil, fmt.Errorf("%s: %w", cl.serverName(a.Client), codeintel.ErrUnsupported)
		}
		errs = append(errs, a.Error.Message)
		if len(ok) == 0 && len(errs) == len(res.Answers) {
			return nil, &codeintel.ServerError{Server: cl.serverName(a.Client), Reason: strings.Join(errs, "; ")}
		}
	}
	return ok, nil
}

// positionParams are a TextDocumentPositionParams. Positions pass
// unchanged: the protocol counts them in UTF-16 code units, as LSP and
// codeintel do.
func positionParams(at codeintel.DocPos) map[string]any {
	return map[string]any{
		"textDocument": map[string]string{"uri": lspclient.URI(at.Path)},
		"position":     at.Pos,
	}
}

// Status implements codeintel.Source with lsp/clients.
func (s *Source) Status(ctx context.Context, path string) (codeintel.Status, error) {
	return ask(ctx, s, path, func(cl *Clients) (codeintel.Status, error) {
		var res ide.LSPClientsResult
		if err := cl.call(ctx, ide.MethodLSPClients, ide.LSPClientsParams{Path: path}, &res); err != nil {
			return codeintel.Status{}, err
		}
		if len(res.Clients) == 0 {
			return codeintel.Status{}, cl.noClient(path, res.Reason)
		}
		var names []string
		st := codeintel.Status{}
		for _, c := range res.Clients {
			names = append(names, c.Name)
			if st.Indexing == "" {
				st.Indexing = c.Indexing
			}
			if st.LoadError == "" {
				st.LoadError = c.LoadError
			}
			st.Starting = st.Starting || c.Starting
		}
		st.Server = cl.serverName(strings.Join(names, " and "))
		return st, nil
	})
}

// locations asks a location request and merges the clients' answers.
func (s *Source) locations(ctx context.Context, method string, params map[string]any, path string) ([]codeintel.Location, error) {
	return ask(ctx, s, path, func(cl *Clients) ([]codeintel.Location, error) {
		answers, err := cl.request(ctx, path, "", method, params)
		if err != nil {
			return nil, err
		}
		if len(answers) == 1 {
			locs, err := lspclient.DecodeLocations(answers[0].Result)
			if err != nil {
				return nil, fmt.Errorf("%s's answer to %s: %w", cl.serverName(answers[0].Client), method, err)
			}
			return locs, nil
		}
		var out []codeintel.Location
		seen := map[codeintel.Location]bool{}
		for _, a := range answers {
			locs, err := lspclient.DecodeLocations(a.Result)
			if err != nil {
				return nil, fmt.Errorf("%s's answer to %s: %w", cl.serverName(a.Client), method, err)
			}
			for _, l := range locs {
				if !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
			}
		}
		return out, nil
	})
}

// Definition implements codeintel.Source.
func (s *Source) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return s.locations(ctx, "textDocument/definition", positionParams(at), at.Path)
}

// Locations implements codeintel.Locator: a request of ide.LSPMethods
// about a position whose answer is locations, the clients' answers
// merged.
func (s *Source) Locations(ctx context.Context, method string, at codeintel.DocPos) ([]codeintel.Location, error) {
	if !ide.IsLSPMethod(method) {
		return nil, fmt.Errorf("%s is not a request the language clients carry for gemkit (%s)", method, strings.Join(ide.LSPMethods, ", "))
	}
	return s.locations(ctx, method, positionParams(at), at.Path)
}

// Implementations implements codeintel.Source.
func (s *Source) Implementations(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return s.locations(ctx, "textDocument/implementation", positionParams(at), at.Path)
}

// References implements codeintel.Source; the declaration is included.
func (s *Source) References(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	p := positionParams(at)
	p["context"] = map[string]bool{"includeDeclaration": true}
	return s.locations(ctx, "textDocument/references", p, at.Path)
}

// Hover implements codeintel.Source: the clients' texts, joined.
func (s *Source) Hover(ctx context.Context, at codeintel.DocPos) (codeintel.Hover, error) {
	return ask(ctx, s, at.Path, func(cl *Clients) (codeintel.Hover, error) {
		answers, err := cl.request(ctx, at.Path, "", "textDocument/hover", positionParams(at))
		if err != nil {
			return codeintel.Hover{}, err
		}
		var out codeintel.Hover
		for _, a := range answers {
			h, err := lspclient.DecodeHover(a.Result)
			if err != nil {
				return codeintel.Hover{}, fmt.Errorf("%s: %w", cl.serverName(a.Client), err)
			}
			if strings.TrimSpace(h.Text) == "" {
				continue
			}
			if out.Text == "" {
				out = h
			} else {
				out.Text += "\n\n" + h.Text
			}
		}
		return out, nil
	})
}

// DocumentSymbols implements codeintel.Source: the first client's
// outline that is not empty.
func (s *Source) DocumentSymbols(ctx context.Context, path string) ([]codeintel.Symbol, error) {
	return ask(ctx, s, path, func(cl *Clients) ([]codeintel.Symbol, error) {
		answers, err := cl.request(ctx, path, "", "textDocument/documentSymbol",
			map[string]any{"textDocument": map[string]string{"uri": lspclient.URI(path)}})
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			syms, err := lspclient.DecodeSymbols(a.Result, path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cl.serverName(a.Client), err)
			}
			if len(syms) > 0 {
				return syms, nil
			}
		}
		return nil, nil
	})
}

// WorkspaceSymbols implements codeintel.Source: every client is asked.
func (s *Source) WorkspaceSymbols(ctx context.Context, query string) ([]codeintel.Symbol, error) {
	return ask(ctx, s, "", func(cl *Clients) ([]codeintel.Symbol, error) {
		answers, err := cl.request(ctx, "", "", "workspace/symbol", map[string]string{"query": query})
		if err != nil {
			return nil, err
		}
		var out []codeintel.Symbol
		for _, a := range answers {
			syms, err := lspclient.DecodeSymbols(a.Result, "")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cl.serverName(a.Client), err)
			}
			out = append(out, syms...)
		}
		return out, nil
	})
}

// calls prepares the call hierarchy at a position and asks the client
// that gave the item for its calls.
func (s *Source) calls(ctx context.Context, at codeintel.DocPos, incoming bool) ([]codeintel.Call, error) {
	return ask(ctx, s, at.Path, func(cl *Clients) ([]codeintel.Call, error) {
		answers, err := cl.request(ctx, at.Path, "", "textDocument/prepareCallHierarchy", positionParams(at))
		if err != nil {
			return nil, err
		}
		method := "callHierarchy/outgoingCalls"
		if incoming {
			method = "callHierarchy/incomingCalls"
		}
		for _, a := range answers {
			var items []json.RawMessage
			if len(a.Result) == 0 {
				continue
			}
			if err := json.Unmarshal(a.Result, &items); err != nil {
				return nil, fmt.Errorf("%s's call hierarchy: %w", cl.serverName(a.Client), err)
			}
			if len(items) == 0 {
				continue
			}
			itemURI, err := lspclient.CallItemURI(items[0])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cl.serverName(a.Client), err)
			}
			got, err := cl.request(ctx, at.Path, a.Client, method, map[string]json.RawMessage{"item": items[0]})
			if err != nil {
				return nil, err
			}
			var out []codeintel.Call
			for _, g := range got {
				var calls []codeintel.Call
				if incoming {
					calls, err = lspclient.DecodeIncomingCalls(g.Result)
				} else {
					calls, err = lspclient.DecodeOutgoingCalls(g.Result, itemURI)
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %w", cl.serverName(g.Client), err)
				}
				out = append(out, calls...)
			}
			return out, nil
		}
		return nil, nil
	})
}

// IncomingCalls implements codeintel.Source.
func (s *Source) IncomingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	return s.calls(ctx, at, true)
}

// OutgoingCalls implements codeintel.Source.
func (s *Source) OutgoingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	return s.calls(ctx, at, false)
}

// Diagnostics implements codeintel.Source with diagnostics/get, asked to
// settle: what the clients report once they have looked at each file's
// current text. A file the editor has no client for is asked of
// gemkit's own servers.
func (s *Source) Diagnostics(ctx context.Context, paths []string) ([]codeintel.FileDiagnostics, error) {
	asks := paths
	if len(asks) == 0 {
		asks = []string{""}
	}
	var out []codeintel.FileDiagnostics
	for _, p := range asks {
		files, err := ask(ctx, s, p, func(cl *Clients) ([]codeintel.FileDiagnostics, error) {
			return cl.diagnostics(ctx, p)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// diagnostics asks cl for the diagnostics of p ("" for every file).
func (cl *Clients) diagnostics(ctx context.Context, p string) ([]codeintel.FileDiagnostics, error) {
	var clients ide.LSPClientsResult
	if err := cl.call(ctx, ide.MethodLSPClients, ide.LSPClientsParams{Path: p}, &clients); err != nil {
		return nil, err
	}
	if len(clients.Clients) == 0 {
		return nil, cl.noClient(p, clients.Reason)
	}
	settle := settleTimeout
	if dl, ok := ctx.Deadline(); ok {
		settle = min(settle, time.Until(dl)/2)
	}
	var res ide.DiagnosticsResult
	params := ide.DiagnosticsParams{Path: p, Settle: max(int(settle/time.Millisecond), 1)}
	if err := cl.call(ctx, ide.MethodDiagnostics, params, &res); err != nil {
		return nil, err
	}
	var out []codeintel.FileDiagnostics
	found := false
	for _, f := range res.Files {
		found = found || f.Path == p
		if f.Diagnostics == nil {
			f.Diagnostics = []codeintel.Diagnostic{}
		}
		out = append(out, f)
	}
	if p != "" && !found {
		out = append(out, codeintel.FileDiagnostics{Path: p, Diagnostics: []codeintel.Diagnostic{}})
	}
	return out, nil
}

// Changed implements codeintel.Source: every set of clients hears of
// the files with lsp/changed. An editor's (Unsaved) is not given an
// agent's text: its buffers are the person's, and its clients keep
// seeing them; it is told only of files written on disk (it reloads
// their unmodified buffers, and its clients hear of the others).
func (s *Source) Changed(ctx context.Context, changes []codeintel.Change) error {
	var errs []error
	for _, cl := range s.sets(ctx) {
		var p ide.LSPChangedParams
		for _, c := range changes {
			if c.Text != nil && cl.Unsaved {
				continue
			}
			if c.Text != nil {
				if p.Texts == nil {
					p.Texts = map[string]string{}
				}
				p.Texts[c.Path] = *c.Text
			}
			if !slices.Contains(p.Paths, c.Path) {
				p.Paths = append(p.Paths, c.Path)
			}
		}
		if len(p.Paths) == 0 {
			continue
		}
		if err := cl.call(ctx, ide.MethodLSPChanged, p, nil); err != nil && !codeintel.IsNoServer(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unsaved implements codeintel.Unsaved with lsp/unsaved: the text of the
// editor's buffers its clients see that differ from the disk.
func (s *Source) Unsaved(ctx context.Context) (map[string]string, error) {
	sets := s.sets(ctx)
	if len(sets) == 0 || !sets[0].Unsaved {
		return nil, nil
	}
	var res ide.LSPUnsavedResult
	if err := sets[0].call(ctx, ide.MethodLSPUnsaved, struct{}{}, &res); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(res.Files))
	for _, f := range res.Files {
		out[f.Path] = f.Text
	}
	return out, nil
}
