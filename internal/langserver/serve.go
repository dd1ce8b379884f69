// The Pool as a set of language clients: it answers the editor
// protocol's language requests (docs/editor-protocol.md) as an editor
// plugin does, so that one Source (internal/lspsource) asks gemkit's own
// servers and an editor's alike.

package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// Handle answers one of the editor protocol's language requests
// (lsp/clients, lsp/request, lsp/changed, lsp/unsaved, diagnostics/get)
// over the Pool's servers, as an editor plugin answers them over its
// editor's clients: each server is a client named for its table entry
// ("gopls"). Two extensions of the protocol's answers carry what a
// plugin has no need to say: why a file has no client (Reason, with the
// server to install), and why diagnostics may be stale (Stale).
// lsp/changed also takes Texts, an agent's text not written yet.
//
// diagnostics/get needs no settle: the Pool always waits, bounded (15 s
// and ctx), for each file's diagnostics of its latest text, and for the
// workspace's to settle (diagnostics.go). A malformed request is a
// *jsonrpc.Error; a server that failed is the error of its answer, as a
// plugin reports a client's.
func (p *Pool) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	decode := func(v any) error {
		if err := json.Unmarshal(params, v); err != nil {
			return jsonrpc.InvalidParams(method, jsonrpc.Problem(err))
		}
		return nil
	}
	switch method {
	case ide.MethodLSPClients:
		var q ide.LSPClientsParams
		if err := decode(&q); err != nil {
			return nil, err
		}
		return p.clients(q.Path), nil
	case ide.MethodLSPRequest:
		var q ide.LSPRequestParams
		if err := decode(&q); err != nil {
			return nil, err
		}
		if !ide.IsLSPMethod(q.Method) {
			return nil, jsonrpc.InvalidParams(method, fmt.Sprintf("method %q is not one lsp/request may carry (%s)", q.Method, strings.Join(ide.LSPMethods, ", ")))
		}
		if q.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(q.Timeout)*time.Millisecond)
			defer cancel()
		}
		if q.Path == "" {
			return p.requestAll(ctx, q)
		}
		return p.requestOne(ctx, q), nil
	case ide.MethodLSPChanged:
		var q ide.LSPChangedParams
		if err := decode(&q); err != nil {
			return nil, err
		}
		changes := make([]codeintel.Change, 0, len(q.Paths))
		for _, path := range q.Paths {
			ch := codeintel.Change{Path: path}
			if t, ok := q.Texts[path]; ok {
				ch.Text = &t
			}
			changes = append(changes, ch)
		}
		if err := p.changed(ctx, changes); err != nil && !codeintel.IsNoServer(err) {
			return nil, err
		}
		return struct{}{}, nil
	case ide.MethodLSPUnsaved:
		// The servers see no buffers of a person's.
		return ide.LSPUnsavedResult{Files: []ide.UnsavedFile{}}, nil
	case ide.MethodDiagnostics:
		var q ide.DiagnosticsParams
		if err := decode(&q); err != nil {
			return nil, err
		}
		var paths []string
		if q.Path != "" {
			paths = []string{q.Path}
		}
		files, err := p.diagnostics(ctx, paths)
		if err != nil {
			return nil, err
		}
		for i := range files {
			if files[i].Diagnostics == nil {
				files[i].Diagnostics = []codeintel.Diagnostic{}
			}
		}
		return ide.DiagnosticsResult{Files: files}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
}

// clients answers lsp/clients: the server of path (not started for the
// question), or, for "", the servers of the workspace's languages.
func (p *Pool) clients(path string) ide.LSPClientsResult {
	if path != "" {
		r, err := p.serverFor(path)
		if err != nil {
			return ide.LSPClientsResult{Clients: []ide.LSPClient{}, Reason: err.Error()}
		}
		return ide.LSPClientsResult{Clients: []ide.LSPClient{r.info()}}
	}
	out := ide.LSPClientsResult{Clients: []ide.LSPClient{}}
	seen := map[string]bool{}
	var why error
	for _, s := range p.languages() {
		file := p.someFile(s.Extensions)
		if file == "" {
			continue
		}
		r, err := p.serverFor(file)
		if err != nil {
			why = orElse(why, err)
			continue
		}
		if !seen[r.server.Name] {
			seen[r.server.Name] = true
			out.Clients = append(out.Clients, r.info())
		}
	}
	if len(out.Clients) == 0 {
		out.Reason = orElse(why, errNoLanguage).Error()
	}
	return out
}

// errNoLanguage is why a workspace has no server.
var errNoLanguage = &codeintel.NoServerError{Reason: "the workspace holds no files of a language gemkit has a language server for"}

// orElse is err, or else when err is nil.
func orElse(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

// info is the server as lsp/clients names it.
func (r *running) info() ide.LSPClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	cl := ide.LSPClient{Name: r.server.Name}
	if r.client != nil {
		cl.Indexing = r.client.Indexing()
		cl.LoadError = r.p.loadError(r.client)
	} else {
		// Not running: the next question starts it, unless it failed
		// for good (the question then says why).
		cl.Starting = r.failed == nil
	}
	return cl
}

// loadError is c's report that it could not load the workspace, with
// what to do when gemkit can say; "" when it has made none.
func (p *Pool) loadError(c *lspclient.Client) string {
	e := c.LoadError()
	if fix := p.loadFix(e); fix != "" {
		e += "; " + fix
	}
	return e
}

// loadFix is what to do about a server's failure to load the workspace,
// "" when gemkit cannot say: a module missing from the module cache the
// server reads, with no network to fetch it (docs/code-intel.md, "No
// network, and Go's module proxy"). An agent may start gemkit with an
// environment naming no module cache (none of GOMODCACHE, GOPATH and
// HOME): the server then reads an empty one of its own.
func (p *Pool) loadFix(loadErr string) string {
	if loadErr == "" || !strings.Contains(loadErr, "GOPROXY=off") {
		return ""
	}
	cache := goModCache(envmap.Of(p.env))
	if cache == "" {
		return noModCacheFix(p.ws)
	}
	return fmt.Sprintf("run `go mod download` in %s (gemkit's servers have no network: gopls reads the modules in %s)", p.ws, cache)
}

// noModCacheFix is what to do when gemkit's environment names no Go
// module cache for gopls to read (see loadFix).
func noModCacheFix(ws string) string {
	return fmt.Sprintf("gemkit's environment names no Go module cache (none of GOMODCACHE, GOPATH and HOME is set; an agent may start its MCP servers with a reduced environment), so gopls reads an empty one: set GOMODCACHE to yours (`go env GOMODCACHE`) in the environment gemkit starts with, and run `go mod download` in %s", ws)
}

// requestOne answers lsp/request about one file: its server, started, with
// the file open.
func (p *Pool) requestOne(ctx context.Context, q ide.LSPRequestParams) ide.LSPRequestResult {
	r, err := p.serverFor(q.Path)
	if err != nil {
		return ide.LSPRequestResult{Clients: []string{}, Answers: []ide.LSPAnswer{}, Reason: err.Error()}
	}
	res := ide.LSPRequestResult{Clients: []string{r.server.Name}, Answers: []ide.LSPAnswer{}}
	if q.Client != "" && q.Client != r.server.Name {
		return res
	}
	_, c, done, err := p.at(ctx, q.Path)
	if err != nil {
		res.Answers = append(res.Answers, answerErr(r.server.Name, err))
		return res
	}
	defer done()
	raw, err := c.Request(ctx, q.Method, q.Params)
	switch {
	case errors.Is(err, codeintel.ErrUnsupported):
	case err != nil:
		res.Answers = append(res.Answers, answerErr(r.server.Name, r.exited(c, err)))
	default:
		res.Answers = append(res.Answers, ide.LSPAnswer{Client: r.server.Name, Result: raw})
	}
	return res
}

// requestAll answers lsp/request without a path (workspace/symbol):
// every server of the workspace's languages is asked.
func (p *Pool) requestAll(ctx context.Context, q ide.LSPRequestParams) (ide.LSPRequestResult, error) {
	// A name declared in a file written just before, which the watcher
	// has not reported yet, is found.
	if p.watcher != nil && p.watcher.Waiting() {
		p.watcher.Sync(ctx)
	}
	res := ide.LSPRequestResult{Clients: []string{}, Answers: []ide.LSPAnswer{}}
	var mu sync.Mutex
	_, err := p.workspaceServers(ctx, func(r *running, c *lspclient.Client) error {
		if q.Client != "" && q.Client != r.server.Name {
			return nil
		}
		raw, err := c.Request(ctx, q.Method, q.Params)
		for err == nil && empty(raw) && r.young() && c.LoadError() == "" {
			// A server still reading the workspace may find nothing yet
			// without saying so: ask again shortly, while it is young
			// (and has not said that it could not load it).
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
			raw, err = c.Request(ctx, q.Method, q.Params)
		}
		mu.Lock()
		defer mu.Unlock()
		res.Clients = append(res.Clients, r.server.Name)
		switch {
		case errors.Is(err, codeintel.ErrUnsupported):
		case err != nil:
			res.Answers = append(res.Answers, answerErr(r.server.Name, r.exited(c, err)))
		default:
			res.Answers = append(res.Answers, ide.LSPAnswer{Client: r.server.Name, Result: raw})
		}
		return nil
	})
	var ns *codeintel.NoServerError
	if errors.As(err, &ns) {
		return ide.LSPRequestResult{Clients: []string{}, Answers: []ide.LSPAnswer{}, Reason: ns.Error()}, nil
	}
	return res, err
}

// empty reports whether a result is null or an empty list.
func empty(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == "[]"
}

// answerErr is a server's failure as lsp/request reports it: a server
// that went is the message of its codeintel.ServerError, so that the
// answer names it once.
func answerErr(name string, err error) ide.LSPAnswer {
	code := jsonrpc.CodeRequestFailed
	msg := err.Error()
	var se *codeintel.ServerError
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &se):
		msg = se.Reason
	case errors.As(err, &je):
		code, msg = je.Code, je.Message
	}
	return ide.LSPAnswer{Client: name, Error: &ide.LSPError{Code: code, Message: msg}}
}

// Call is Handle in this process, as internal/lspsource's Conn. The
// params pass through JSON, as they would through a broker; a result of
// the type asked for is handed over as it is (a server's answer of a
// thousand locations is not encoded and read again for nothing), any
// other through JSON.
func (p *Pool) Call(ctx context.Context, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	res, err := p.Handle(ctx, method, raw)
	if err != nil || result == nil {
		return err
	}
	if dst := reflect.ValueOf(result); dst.Kind() == reflect.Pointer && !dst.IsNil() && reflect.TypeOf(res) == dst.Elem().Type() {
		dst.Elem().Set(reflect.ValueOf(res))
		return nil
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, result)
}
