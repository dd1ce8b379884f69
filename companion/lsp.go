package companion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// LanguageEditor is an Editor with language clients of its own (Neovim's
// vim.lsp, eglot, lsp-mode, ALE) that answer questions about code: the
// editor protocol's lsp/* requests. The companion relays them at
// ide.LSPPath to gemkit's own processes, whose code-intelligence tools
// then ask the servers the editor already runs (they know its unsaved
// buffers) rather than start their own. An Editor without it (the
// terminal front-end, an LSP client's front-end) has no clients to
// lend: the route answers "method not found".
//
// Paths are absolute; the companion has checked they lie in the
// workspace. Every method is bounded by ctx.
type LanguageEditor interface {
	// LSPClients lists the clients serving path ("" for all).
	LSPClients(ctx context.Context, path string) ([]ide.LSPClient, error)
	// LSPRequest sends one LSP request (one of ide.LSPMethods) to the
	// clients serving p.Path.
	LSPRequest(ctx context.Context, p ide.LSPRequestParams) (ide.LSPRequestResult, error)
	// LSPChanged tells the editor that files changed on disk.
	LSPChanged(ctx context.Context, paths []string) error
	// LSPUnsaved returns the unsaved buffers the clients see.
	LSPUnsaved(ctx context.Context) ([]ide.UnsavedFile, error)
	// SettledDiagnostics are the diagnostics of path ("" for all files)
	// once the clients have reported on the buffers' current text, at
	// most settle from now.
	SettledDiagnostics(ctx context.Context, path string, settle time.Duration) ([]FileDiagnostics, error)
}

// lspCall is the JSON-RPC request POSTed to ide.LSPPath.
type lspCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// handleLSP relays one language request to the editor. The request has
// passed the guard (token, Host, no Origin); its paths must lie in the
// workspace, its LSP method must be one that only reads, and every wait
// is bounded by the editor timeout.
func (s *Server) handleLSP(w http.ResponseWriter, r *http.Request) {
	body, ok := postBody(w, r, func(status int, msg string) {
		if status == http.StatusRequestEntityTooLarge {
			writeJSON(w, status, lspError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+msg))
			return
		}
		writeJSON(w, status, lspError(nil, jsonrpc.CodeParseError, "Parse error: "+msg))
	})
	if !ok {
		return
	}
	if err := jsonrpc.CheckJSONText(body); err != nil {
		writeJSON(w, http.StatusOK, lspError(nil, jsonrpc.CodeInvalidParams, "Invalid params: "+err.Error()))
		return
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] != '{' && json.Valid(t) {
		writeJSON(w, http.StatusOK, lspError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the body must be one JSON-RPC request object; batches are not supported"))
		return
	}
	var call lspCall
	if err := json.Unmarshal(body, &call); err != nil {
		writeJSON(w, http.StatusOK, lspError(nil, jsonrpc.CodeParseError, "Parse error: "+jsonrpc.Problem(err)))
		return
	}
	id := call.ID
	if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		writeJSON(w, http.StatusOK, lspError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a request to "+ide.LSPPath+" needs jsonrpc \"2.0\", a string or number id and a method"))
		return
	}
	if call.JSONRPC != "2.0" || call.Method == "" {
		writeJSON(w, http.StatusOK, lspError(id, jsonrpc.CodeInvalidRequest, "Invalid Request: a request to "+ide.LSPPath+" needs jsonrpc \"2.0\", a string or number id and a method"))
		return
	}
	result, err := s.lspCall(r.Context(), call.Method, call.Params)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		if rpcErr.Code != jsonrpc.CodeMethodNotFound && rpcErr.Code != jsonrpc.CodeInvalidParams {
			s.log.Debug("language request failed", "method", call.Method, "err", rpcErr.Message)
		}
		writeJSON(w, http.StatusOK, lspError(id, rpcErr.Code, rpcErr.Message))
		return
	}
	writeJSON(w, http.StatusOK, lspAnswer{JSONRPC: "2.0", ID: id, Result: result})
}

// lspAnswer is the route's answer to a request it relayed.
type lspAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

// lspError is the route's error answer (an id of null when the request's
// could not be read).
func lspError(id json.RawMessage, code int, msg string) any {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}}
}

// errNoLanguageClients answers a language request when the editor lends
// no clients.
func errNoLanguageClients(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "Method not found: " + method + ": this editor lends no language clients (its front-end has none, or its plugin does not answer the lsp/* requests)"}
}

func (s *Server) lspCall(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	le, ok := s.editor.(LanguageEditor)
	if !ok {
		return nil, errNoLanguageClients(method)
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	decode := func(v any) error { return decodeLSPParams(method, raw, v) }
	ctx, cancel := context.WithTimeout(ctx, s.cfg.EditorTimeout)
	defer cancel()
	switch method {
	case ide.MethodLSPClients:
		var p ide.LSPClientsParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if err := s.lspPath(method, "path", p.Path, true); err != nil {
			return nil, err
		}
		clients, err := le.LSPClients(ctx, p.Path)
		if err != nil {
			return nil, s.editorErr(method, err)
		}
		if clients == nil {
			clients = []ide.LSPClient{}
		}
		return ide.LSPClientsResult{Clients: clients}, nil
	case ide.MethodLSPRequest:
		var p ide.LSPRequestParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		return s.lspRequest(ctx, le, method, p)
	case ide.MethodLSPChanged:
		var p ide.LSPChangedParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if len(p.Paths) == 0 {
			return nil, jsonrpc.InvalidParams(method, "paths must list at least one file")
		}
		for _, path := range p.Paths {
			if err := s.lspPath(method, "paths[]", path, false); err != nil {
				return nil, err
			}
		}
		if err := le.LSPChanged(ctx, p.Paths); err != nil {
			return nil, s.editorErr(method, err)
		}
		return struct{}{}, nil
	case ide.MethodLSPUnsaved:
		files, err := le.LSPUnsaved(ctx)
		if err != nil {
			return nil, s.editorErr(method, err)
		}
		ws := s.workspaceSnapshot()
		out := []ide.UnsavedFile{}
		for _, f := range files {
			if filepath.IsAbs(f.Path) && inWorkspace(filepath.Clean(f.Path), ws) {
				out = append(out, f)
			}
		}
		return ide.LSPUnsavedResult{Files: out}, nil
	case ide.MethodDiagnostics:
		var p ide.DiagnosticsParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		return s.diagnostics(ctx, le, method, p)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
}

// decodeLSPParams reads a call's params into v; what does not fit is
// the caller's invalid params.
func decodeLSPParams(method string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return jsonrpc.InvalidParams(method, jsonrpc.Problem(err))
	}
	return nil
}

// lspRequest passes one read-only LSP question to the editor's language
// clients, its wait capped below the editor timeout so the answer comes
// back before the call gives up.
func (s *Server) lspRequest(ctx context.Context, le LanguageEditor, method string, p ide.LSPRequestParams) (any, error) {
	if err := s.lspPath(method, "path", p.Path, true); err != nil {
		return nil, err
	}
	if !ide.IsLSPMethod(p.Method) {
		return nil, jsonrpc.InvalidParams(method, fmt.Sprintf("method %q is not one lsp/request may carry: only questions that change nothing (%s)", p.Method, strings.Join(ide.LSPMethods, ", ")))
	}
	if t := bytes.TrimSpace(p.Params); len(t) == 0 || t[0] != '{' {
		return nil, jsonrpc.InvalidParams(method, "params must be the LSP request's params object")
	}
	limit := int((s.cfg.EditorTimeout - time.Second) / time.Millisecond)
	limit = min(max(limit, 1), ide.MaxLSPTimeout)
	if p.Timeout <= 0 || p.Timeout > limit {
		p.Timeout = limit
	}
	res, err := le.LSPRequest(ctx, p)
	if err != nil {
		return nil, s.editorErr(method, err)
	}
	if res.Clients == nil {
		res.Clients = []string{}
	}
	if res.Answers == nil {
		res.Answers = []ide.LSPAnswer{}
	}
	return res, nil
}

// diagnostics waits, at most the editor timeout less a second, for the
// editor's diagnostics of p.Path to settle, and keeps those the caller
// may see.
func (s *Server) diagnostics(ctx context.Context, le LanguageEditor, method string, p ide.DiagnosticsParams) (any, error) {
	if err := s.lspPath(method, "path", p.Path, true); err != nil {
		return nil, err
	}
	settle := time.Duration(min(max(p.Settle, 0), ide.MaxLSPTimeout)) * time.Millisecond
	settle = min(settle, s.cfg.EditorTimeout-time.Second)
	files, err := le.SettledDiagnostics(ctx, p.Path, settle)
	if err != nil {
		return nil, s.editorErr(method, err)
	}
	return map[string]any{"files": s.keepDiagnostics(files, p.Path)}, nil
}

// lspPath checks a path of a language request: absolute, and in a
// workspace folder once symbolic links are resolved ("" allowed when
// optional).
func (s *Server) lspPath(method, field, p string, optional bool) error {
	if p == "" {
		if optional {
			return nil
		}
		return jsonrpc.InvalidParams(method, field+" is required")
	}
	if !filepath.IsAbs(p) {
		return jsonrpc.InvalidParams(method, fmt.Sprintf("%s must be an absolute path, not %q", field, p))
	}
	if _, _, _, err := resolveInWorkspace(p, s.workspaceSnapshot()); err != nil {
		return jsonrpc.InvalidParams(method, err.Error())
	}
	return nil
}

// inWorkspace reports whether the absolute path p lies in one of the
// workspace folders, symbolic links resolved.
func inWorkspace(p string, ws []string) bool {
	_, _, _, err := resolveInWorkspace(p, ws)
	return err == nil
}

// editorErr words an editor's failure to answer a language request.
func (s *Server) editorErr(method string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the editor did not answer %s within %v", method, s.cfg.EditorTimeout)}
	}
	return err
}
