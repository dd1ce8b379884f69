// Package editorsource is the code-intelligence Source of the editor's own
// language clients: Neovim's vim.lsp, Emacs's eglot and lsp-mode, Vim's
// ALE. It reaches them through the gemkit companion that serves the
// workspace (found as the real Gemini CLI finds it, and authenticated with
// its token), whose ide.LSPPath route relays the editor protocol's lsp/*
// requests to the editor's plugin, which asks the clients. Answers then
// reflect the buffers the person has not saved, and no second server
// indexes the project.
//
// A Finder is a codeintel.EditorFinder: codeintel.Choose asks the editor
// first and gemkit's own servers when the editor has no client for a file
// (a *codeintel.NoServerError) or its server lacks the request
// (codeintel.ErrUnsupported).
package editorsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// Bounds of one question to the editor.
const (
	// defaultTimeout bounds a request when its context has no deadline.
	defaultTimeout = 20 * time.Second
	// settleTimeout bounds the wait for diagnostics that are current.
	settleTimeout = 5 * time.Second
	// maxAnswer bounds the body read of one answer.
	maxAnswer = 32 << 20
)

// Source is the editor's language clients, through its companion. It is
// safe for concurrent use.
type Source struct {
	url, auth string
	http      *http.Client
	// editor names the editor in answers ("Neovim").
	editor string
	// gone is set once the companion stopped answering: the Finder looks
	// again.
	gone atomic.Bool
	// lends is set to 1 once the editor answered a language request and
	// to -1 once it said it lends no clients (its front-end has none).
	lends atomic.Int32
	ids   atomic.Int64
}

var (
	_ codeintel.Source  = (*Source)(nil)
	_ codeintel.Unsaved = (*Source)(nil)
)

// Editor names the editor ("Neovim"), as its companion's discovery file
// does.
func (s *Source) Editor() string { return s.editor }

// Endpoint is where its companion answers (http://127.0.0.1:port/lsp).
func (s *Source) Endpoint() string { return s.url }

// errGone marks a companion that no longer answers.
var errGone = errors.New("the editor's companion no longer answers")

// call sends one language request to the companion and decodes its
// result.
func (s *Source) call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.ids.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", s.auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", s.editor, ctx.Err())
		}
		s.gone.Store(true)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion no longer answers (%v)", s.editor, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s's answer to %s: %w", s.editor, method, err)
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("%s's answer to %s is larger than %d MiB", s.editor, method, maxAnswer>>20)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		// A companion from before the route: no language clients to lend.
		s.lends.Store(-1)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion lends no language clients (it is older than the %s route)", s.editor, ide.LSPPath)}
	case http.StatusUnauthorized, http.StatusForbidden:
		s.gone.Store(true)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion refused gemkit's request (HTTP %d): its discovery file is stale", s.editor, resp.StatusCode)}
	default:
		return fmt.Errorf("%s's companion answered %s with HTTP %d: %s", s.editor, method, resp.StatusCode, clip(string(data)))
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("%s's companion answered %s with something that is not JSON-RPC: %s", s.editor, method, clip(string(data)))
	}
	if msg.Error != nil {
		if msg.Error.Code == jsonrpc.CodeMethodNotFound {
			if method == ide.MethodLSPClients || method == ide.MethodLSPRequest {
				s.lends.Store(-1)
				return &codeintel.NoServerError{Reason: fmt.Sprintf("%s lends no language clients to gemkit (%s)", s.editor, msg.Error.Message)}
			}
			// A plugin that answers the questions but not this one.
			return fmt.Errorf("%s: %s: %w", s.editor, msg.Error.Message, codeintel.ErrUnsupported)
		}
		return fmt.Errorf("%s: %s", s.editor, msg.Error.Message)
	}
	s.lends.Store(1)
	if result != nil {
		if err := json.Unmarshal(msg.Result, result); err != nil {
			return fmt.Errorf("%s's answer to %s: %w", s.editor, method, err)
		}
	}
	return nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// timeoutMS is how long the editor may wait for its clients: what ctx
// leaves, less a margin for the answer to come back.
func timeoutMS(ctx context.Context) int {
	d := defaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl) - 300*time.Millisecond
	}
	return min(max(int(d/time.Millisecond), 1), ide.MaxLSPTimeout)
}

// noClient is the answer for a file no client of the editor serves.
func (s *Source) noClient(path string) error {
	what := "this workspace"
	if path != "" {
		what = path
	}
	return &codeintel.NoServerError{Path: path, Reason: fmt.Sprintf("%s has no language client for %s", s.editor, what)}
}

// request sends an LSP request to the clients serving path (all when "")
// or to the one named client; it returns their results and the client
// of each.
func (s *Source) request(ctx context.Context, path, client, method string, params any) ([]ide.LSPAnswer, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var res ide.LSPRequestResult
	p := ide.LSPRequestParams{Path: path, Client: client, Method: method, Params: raw, Timeout: timeoutMS(ctx)}
	if err := s.call(ctx, ide.MethodLSPRequest, p, &res); err != nil {
		return nil, err
	}
	if len(res.Clients) == 0 {
		return nil, s.noClient(path)
	}
	if len(res.Answers) == 0 {
		return nil, fmt.Errorf("%s's %s: %w", s.editor, strings.Join(res.Clients, ", "), codeintel.ErrUnsupported)
	}
	var ok []ide.LSPAnswer
	var errs []string
	for _, a := range res.Answers {
		if a.Error == nil {
			ok = append(ok, a)
			continue
		}
		if a.Error.Code == jsonrpc.CodeMethodNotFound && len(res.Answers) == 1 {
			return nil, fmt.Errorf("%s's %s: %w", s.editor, a.Client, codeintel.ErrUnsupported)
		}
		errs = append(errs, a.Error.Message)
		if len(ok) == 0 && len(errs) == len(res.Answers) {
			return nil, &codeintel.ServerError{Server: s.serverName(a.Client), Reason: strings.Join(errs, "; ")}
		}
	}
	return ok, nil
}

func (s *Source) serverName(client string) string { return s.editor + "'s " + client }

// Status implements codeintel.Source with lsp/clients.
func (s *Source) Status(ctx context.Context, path string) (codeintel.Status, error) {
	var res ide.LSPClientsResult
	if err := s.call(ctx, ide.MethodLSPClients, ide.LSPClientsParams{Path: path}, &res); err != nil {
		return codeintel.Status{}, err
	}
	if len(res.Clients) == 0 {
		return codeintel.Status{}, s.noClient(path)
	}
	var names []string
	st := codeintel.Status{}
	for _, c := range res.Clients {
		names = append(names, c.Name)
		if st.Indexing == "" {
			st.Indexing = c.Indexing
		}
	}
	st.Server = s.editor + "'s " + strings.Join(names, " and ")
	return st, nil
}

// locations asks a location request and merges the clients' answers.
func (s *Source) locations(ctx context.Context, method string, params any, path string) ([]codeintel.Location, error) {
	answers, err := s.request(ctx, path, "", method, params)
	if err != nil {
		return nil, err
	}
	var out []codeintel.Location
	seen := map[codeintel.Location]bool{}
	for _, a := range answers {
		locs, err := lspclient.DecodeLocations(a.Result)
		if err != nil {
			return nil, fmt.Errorf("%s's answer to %s: %w", s.serverName(a.Client), method, err)
		}
		for _, l := range locs {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// Definition implements codeintel.Source.
func (s *Source) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return s.locations(ctx, "textDocument/definition", positionParams(at), at.Path)
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
	answers, err := s.request(ctx, at.Path, "", "textDocument/hover", positionParams(at))
	if err != nil {
		return codeintel.Hover{}, err
	}
	var out codeintel.Hover
	for _, a := range answers {
		h, err := lspclient.DecodeHover(a.Result)
		if err != nil {
			return codeintel.Hover{}, fmt.Errorf("%s: %w", s.serverName(a.Client), err)
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
}

// DocumentSymbols implements codeintel.Source: the first client's
// outline that is not empty.
func (s *Source) DocumentSymbols(ctx context.Context, path string) ([]codeintel.Symbol, error) {
	answers, err := s.request(ctx, path, "", "textDocument/documentSymbol",
		map[string]any{"textDocument": map[string]string{"uri": lspclient.URI(path)}})
	if err != nil {
		return nil, err
	}
	for _, a := range answers {
		syms, err := lspclient.DecodeSymbols(a.Result, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.serverName(a.Client), err)
		}
		if len(syms) > 0 {
			return syms, nil
		}
	}
	return nil, nil
}

// WorkspaceSymbols implements codeintel.Source: every client is asked.
func (s *Source) WorkspaceSymbols(ctx context.Context, query string) ([]codeintel.Symbol, error) {
	answers, err := s.request(ctx, "", "", "workspace/symbol", map[string]string{"query": query})
	if err != nil {
		return nil, err
	}
	var out []codeintel.Symbol
	for _, a := range answers {
		syms, err := lspclient.DecodeSymbols(a.Result, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.serverName(a.Client), err)
		}
		out = append(out, syms...)
	}
	return out, nil
}

// calls prepares the call hierarchy at a position and asks the client
// that gave the item for its calls.
func (s *Source) calls(ctx context.Context, at codeintel.DocPos, incoming bool) ([]codeintel.Call, error) {
	answers, err := s.request(ctx, at.Path, "", "textDocument/prepareCallHierarchy", positionParams(at))
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
			return nil, fmt.Errorf("%s's call hierarchy: %w", s.serverName(a.Client), err)
		}
		if len(items) == 0 {
			continue
		}
		itemURI, err := lspclient.CallItemURI(items[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.serverName(a.Client), err)
		}
		got, err := s.request(ctx, at.Path, a.Client, method, map[string]json.RawMessage{"item": items[0]})
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
				return nil, fmt.Errorf("%s: %w", s.serverName(g.Client), err)
			}
			out = append(out, calls...)
		}
		return out, nil
	}
	return nil, nil
}

// IncomingCalls implements codeintel.Source.
func (s *Source) IncomingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	return s.calls(ctx, at, true)
}

// OutgoingCalls implements codeintel.Source.
func (s *Source) OutgoingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	return s.calls(ctx, at, false)
}

// editorDiagnostic is a diagnostic as the editor protocol carries it:
// 1-based positions, the severity in words.
type editorDiagnostic struct {
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Source   string `json:"source"`
	Code     string `json:"code"`
	Range    struct {
		Start ide.Cursor `json:"start"`
		End   ide.Cursor `json:"end"`
	} `json:"range"`
}

var severities = map[string]codeintel.Severity{"error": codeintel.SevError, "warning": codeintel.SevWarning, "info": codeintel.SevInfo, "hint": codeintel.SevHint}

func zeroBased(c ide.Cursor) codeintel.Position {
	return codeintel.Position{Line: max(c.Line-1, 0), Character: max(c.Character-1, 0)}
}

// Diagnostics implements codeintel.Source with diagnostics/get, asked to
// settle: what the editor shows once its clients have looked at each
// buffer's current text (a file not open in the editor is opened hidden
// first). A file no client serves is passed to gemkit's own servers.
func (s *Source) Diagnostics(ctx context.Context, paths []string) ([]codeintel.FileDiagnostics, error) {
	asks := paths
	if len(asks) == 0 {
		asks = []string{""}
	}
	var out []codeintel.FileDiagnostics
	for _, p := range asks {
		var cl ide.LSPClientsResult
		if err := s.call(ctx, ide.MethodLSPClients, ide.LSPClientsParams{Path: p}, &cl); err != nil {
			return nil, err
		}
		if len(cl.Clients) == 0 {
			return nil, s.noClient(p)
		}
		settle := settleTimeout
		if dl, ok := ctx.Deadline(); ok {
			settle = min(settle, time.Until(dl)/2)
		}
		var res struct {
			Files []struct {
				Path        string             `json:"path"`
				Diagnostics []editorDiagnostic `json:"diagnostics"`
			} `json:"files"`
		}
		params := ide.DiagnosticsParams{Path: p, Settle: max(int(settle/time.Millisecond), 1)}
		if err := s.call(ctx, ide.MethodDiagnostics, params, &res); err != nil {
			return nil, err
		}
		found := false
		for _, f := range res.Files {
			fd := codeintel.FileDiagnostics{Path: f.Path, Diagnostics: []codeintel.Diagnostic{}}
			for _, d := range f.Diagnostics {
				fd.Diagnostics = append(fd.Diagnostics, codeintel.Diagnostic{
					Range:    codeintel.Range{Start: zeroBased(d.Range.Start), End: zeroBased(d.Range.End)},
					Severity: severities[d.Severity],
					Code:     d.Code,
					Source:   d.Source,
					Message:  d.Message,
				})
			}
			found = found || f.Path == p
			out = append(out, fd)
		}
		if p != "" && !found {
			out = append(out, codeintel.FileDiagnostics{Path: p, Diagnostics: []codeintel.Diagnostic{}})
		}
	}
	return out, nil
}

// Changed implements codeintel.Source: files written on disk are sent
// with lsp/changed (the editor reloads their unmodified buffers, and its
// clients hear of the others). A change that carries a text is not shown
// to the editor: its buffers are the person's, and its clients keep
// seeing them.
func (s *Source) Changed(ctx context.Context, changes []codeintel.Change) error {
	var paths []string
	for _, c := range changes {
		if c.Text == nil && !slices.Contains(paths, c.Path) {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return s.call(ctx, ide.MethodLSPChanged, ide.LSPChangedParams{Paths: paths}, nil)
}

// Unsaved implements codeintel.Unsaved with lsp/unsaved: the text of the
// buffers the clients see that differ from the disk.
func (s *Source) Unsaved(ctx context.Context) (map[string]string, error) {
	var res ide.LSPUnsavedResult
	if err := s.call(ctx, ide.MethodLSPUnsaved, struct{}{}, &res); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(res.Files))
	for _, f := range res.Files {
		out[f.Path] = f.Text
	}
	return out, nil
}
