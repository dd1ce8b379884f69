package ide

import "encoding/json"

// The editor's language clients. An editor plugin whose editor has
// language clients (Neovim's vim.lsp, Emacs's eglot and lsp-mode, Vim's
// ALE) answers the lsp/* requests of the editor protocol, so that gemkit's
// code-intelligence tools ask the servers the editor already runs, which
// know its unsaved buffers, instead of starting their own. The companion
// relays the same requests, as JSON-RPC 2.0 over POST at LSPPath, to
// gemkit's own processes (`gemkit mcp`, `gemkit run`) behind its usual
// guard (bearer token, Host, no Origin, loopback). docs/editor-protocol.md
// describes them for plugin authors.
const (
	// LSPPath is the companion's route for the language requests.
	LSPPath = "/lsp"

	// MethodLSPClients lists the language clients that serve a file (or
	// every one): LSPClientsParams → LSPClientsResult.
	MethodLSPClients = "lsp/clients"
	// MethodLSPRequest sends one LSP request to the clients that serve a
	// file (or to every one): LSPRequestParams → LSPRequestResult.
	MethodLSPRequest = "lsp/request"
	// MethodLSPChanged tells the editor that files changed on disk:
	// LSPChangedParams → {}.
	MethodLSPChanged = "lsp/changed"
	// MethodLSPUnsaved returns the unsaved text of the files whose
	// buffers the language clients see: {} → LSPUnsavedResult.
	MethodLSPUnsaved = "lsp/unsaved"
	// MethodDiagnostics is the editor's diagnostics, also served at
	// LSPPath: {path?, settle?} → {files}.
	MethodDiagnostics = "diagnostics/get"
)

// lspMethods are the LSP requests lsp/request may carry, each with the
// server capability that offers it: questions that change nothing. The
// plugins in editors/ carry the same table (Neovim's allowed, Vim's
// s:methods, Emacs's gemkit-lsp--capabilities), in this order:
// editors/methods_test.go fails when one differs.
var lspMethods = []struct{ method, capability string }{
	{"textDocument/definition", "definitionProvider"},
	{"textDocument/declaration", "declarationProvider"},
	{"textDocument/typeDefinition", "typeDefinitionProvider"},
	{"textDocument/implementation", "implementationProvider"},
	{"textDocument/references", "referencesProvider"},
	{"textDocument/hover", "hoverProvider"},
	{"textDocument/documentSymbol", "documentSymbolProvider"},
	{"textDocument/prepareCallHierarchy", "callHierarchyProvider"},
	// A call-hierarchy item's calls are offered with the hierarchy.
	{"callHierarchy/incomingCalls", "callHierarchyProvider"},
	{"callHierarchy/outgoingCalls", "callHierarchyProvider"},
	{"workspace/symbol", "workspaceSymbolProvider"},
}

// LSPMethods are the LSP requests lsp/request may carry: questions that
// change nothing. The companion refuses any other, and a plugin should
// too.
var LSPMethods = func() []string {
	out := make([]string, len(lspMethods))
	for i, m := range lspMethods {
		out[i] = m.method
	}
	return out
}()

// LSPCapability is the server capability that offers method, one of
// LSPMethods ("definitionProvider"); "" for another method.
func LSPCapability(method string) string {
	for _, m := range lspMethods {
		if m.method == method {
			return m.capability
		}
	}
	return ""
}

// IsLSPMethod reports whether lsp/request may carry method.
func IsLSPMethod(method string) bool {
	for _, m := range LSPMethods {
		if m == method {
			return true
		}
	}
	return false
}

// MaxLSPTimeout bounds the timeout of one lsp/request, in milliseconds.
const MaxLSPTimeout = 30_000

// LSPClientsParams are the params of lsp/clients.
type LSPClientsParams struct {
	// Path is an absolute file path; "" asks for every client of the
	// workspace. A file the editor has not open is opened hidden first,
	// so that the clients that would serve it attach.
	Path string `json:"path,omitempty"`
}

// LSPClient is one language client of the editor.
type LSPClient struct {
	// Name is the client's name ("gopls").
	Name string `json:"name"`
	// Indexing says what the server reports it is busy with (its
	// work-done progress, "Loading packages"); "" when idle.
	Indexing string `json:"indexing,omitempty"`
	// LoadError, optional, says why the server could not load the
	// workspace, with what to do: its answers lack what it could not
	// load (gemkit's own servers report gopls's, when a module the
	// workspace needs is missing).
	LoadError string `json:"loadError,omitempty"`
	// Starting, optional, says that the server is not running yet: the
	// next request about the file starts it, which takes seconds for some
	// (gopls loads the workspace's packages). gemkit's own servers say
	// it, so that an agent can tell the person why a check waits; an
	// editor's, already running, need not.
	Starting bool `json:"starting,omitempty"`
}

// LSPClientsResult is the answer to lsp/clients.
type LSPClientsResult struct {
	Clients []LSPClient `json:"clients"`
	// Reason, optional, says why Clients is empty, with what to do
	// (gemkit's own servers name the server to install); a plugin may
	// leave it out.
	Reason string `json:"reason,omitempty"`
}

// LSPRequestParams are the params of lsp/request.
type LSPRequestParams struct {
	// Path is the absolute path of the file the request is about: its
	// clients answer (the file is opened hidden when it is not open).
	// "" sends the request to every client (workspace/symbol).
	Path string `json:"path,omitempty"`
	// Client, when set, names the one client to ask (the one that gave a
	// call-hierarchy item asks about it).
	Client string `json:"client,omitempty"`
	// Method is one of LSPMethods.
	Method string `json:"method"`
	// Params are the LSP request's params, positions in UTF-16 code
	// units. The plugin may replace textDocument.uri with its client's
	// own URI of Path.
	Params json.RawMessage `json:"params"`
	// Timeout bounds the wait for the clients' answers, in milliseconds
	// (at most MaxLSPTimeout); a client that has not answered by then is
	// answered for with an error.
	Timeout int `json:"timeout,omitempty"`
}

// LSPRequestResult is the answer to lsp/request.
type LSPRequestResult struct {
	// Clients names the clients that serve Path (or every client):
	// empty when the editor has none for it.
	Clients []string `json:"clients"`
	// Answers are those of the clients that offer Method: empty when
	// none does.
	Answers []LSPAnswer `json:"answers"`
	// Reason, optional, says why Clients is empty (as in
	// LSPClientsResult).
	Reason string `json:"reason,omitempty"`
}

// LSPAnswer is one client's answer.
type LSPAnswer struct {
	Client string          `json:"client"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *LSPError       `json:"error,omitempty"`
}

// LSPError is a client's or its server's failure.
type LSPError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// LSPChangedParams are the params of lsp/changed.
type LSPChangedParams struct {
	// Paths are absolute paths of files written (or deleted) on disk.
	Paths []string `json:"paths"`
	// Texts, optional, are texts to see for some of Paths as if unsaved
	// (an agent's edit before it writes it): gemkit's own servers take
	// them; the companion does not relay them to an editor, whose
	// buffers are the person's.
	Texts map[string]string `json:"texts,omitempty"`
}

// LSPUnsavedResult is the answer to lsp/unsaved.
type LSPUnsavedResult struct {
	Files []UnsavedFile `json:"files"`
}

// UnsavedFile is a buffer with changes not saved, as the clients see it.
type UnsavedFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// DiagnosticsParams are the params of diagnostics/get.
type DiagnosticsParams struct {
	// Path is an absolute file path; "" asks for every file.
	Path string `json:"path,omitempty"`
	// Settle, in milliseconds, asks for diagnostics that are current:
	// the editor opens Path hidden when it is not open, and answers once
	// its language clients have reported on each buffer's current text,
	// or when Settle has passed. 0 answers at once with what the editor
	// shows (Claude Code's getDiagnostics).
	Settle int `json:"settle,omitempty"`
}
