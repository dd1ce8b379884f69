// Package lspbroker shares one workspace's language servers between every
// agent working in it. The first gemkit process that asks a code question
// in a workspace starts a broker (`gemkit codeintel broker`, detached),
// which runs the servers (internal/langserver's Pool) and listens on a
// Unix socket named for the workspace; every gemkit process there (each
// agent's `gemkit mcp`, `gemkit run`, the Gemini CLI hook) asks it through
// that socket, so two agents start one gopls. The broker ends, and its
// servers with it, when its last client goes.
//
// On the socket, JSON-RPC in internal/jsonrpc's line framing, a client
// speaks the editor protocol's language requests (lsp/clients,
// lsp/request, lsp/changed, lsp/unsaved, diagnostics/get), and the broker
// forwards each unchanged to its Handler, as gopls's forwarder forwards
// LSP: the Pool answers as an editor plugin would, and the client is
// internal/lspsource's Conn. Two requests are the broker's own: hello
// and servers.
package lspbroker

// The broker's own methods.
const (
	// mServers describes the running servers (gemkit codeintel status).
	mServers = "gemkit/servers"
	// mHello is a client's first request: the broker answers with its
	// workspace and pid.
	mHello = "gemkit/hello"
)

// helloParams is a client's hello.
type helloParams struct {
	// HoldFor, when not 0, is a process the broker counts as a client of
	// its own until it ends: the agent a short-lived client (the Gemini
	// CLI hook) works for, so that the servers stay warm between its
	// calls and go with the agent.
	HoldFor int `json:"holdFor,omitempty"`
}

// Hello is the broker's answer to a client's hello.
type Hello struct {
	Workspace string `json:"workspace"`
	Pid       int    `json:"pid"`
	Version   string `json:"version"`
}
