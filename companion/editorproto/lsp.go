package editorproto

import (
	"context"
	"fmt"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
)

// The editor's language clients (optional for plugins): a plugin that
// answers these lends its editor's language clients to gemkit's
// code-intelligence tools; one that answers "method not found" lends none.
const (
	MethodLSPClients = ide.MethodLSPClients
	MethodLSPRequest = ide.MethodLSPRequest
	MethodLSPChanged = ide.MethodLSPChanged
	MethodLSPUnsaved = ide.MethodLSPUnsaved
)

var _ companion.LanguageEditor = (*Conn)(nil)

// LSPClients implements companion.LanguageEditor with lsp/clients.
func (c *Conn) LSPClients(ctx context.Context, path string) ([]ide.LSPClient, error) {
	var res ide.LSPClientsResult
	if err := c.Call(ctx, MethodLSPClients, ide.LSPClientsParams{Path: path}, &res); err != nil {
		return nil, err
	}
	for _, cl := range res.Clients {
		if cl.Name == "" {
			return nil, fmt.Errorf("editor's answer to %s: a client without a name", MethodLSPClients)
		}
	}
	return res.Clients, nil
}

// LSPRequest implements companion.LanguageEditor with lsp/request. The
// editor has the request's own timeout, and a second more to answer.
func (c *Conn) LSPRequest(ctx context.Context, p ide.LSPRequestParams) (ide.LSPRequestResult, error) {
	var res ide.LSPRequestResult
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.Timeout)*time.Millisecond+time.Second)
		defer cancel()
	}
	if err := c.Call(ctx, MethodLSPRequest, p, &res); err != nil {
		return res, err
	}
	for _, a := range res.Answers {
		if a.Client == "" {
			return res, fmt.Errorf("editor's answer to %s: an answer without its client's name", MethodLSPRequest)
		}
	}
	return res, nil
}

// LSPChanged implements companion.LanguageEditor with lsp/changed.
func (c *Conn) LSPChanged(ctx context.Context, paths []string) error {
	return c.Call(ctx, MethodLSPChanged, ide.LSPChangedParams{Paths: paths}, nil)
}

// LSPUnsaved implements companion.LanguageEditor with lsp/unsaved.
func (c *Conn) LSPUnsaved(ctx context.Context) ([]ide.UnsavedFile, error) {
	var res ide.LSPUnsavedResult
	if err := c.Call(ctx, MethodLSPUnsaved, struct{}{}, &res); err != nil {
		return nil, err
	}
	return res.Files, nil
}

// SettledDiagnostics implements companion.LanguageEditor with
// diagnostics/get and its settle member; unlike Diagnostics, a plugin
// without diagnostics/get is an error here, not an empty answer.
func (c *Conn) SettledDiagnostics(ctx context.Context, path string, settle time.Duration) ([]companion.FileDiagnostics, error) {
	ctx, cancel := context.WithTimeout(ctx, settle+c.timeout)
	defer cancel()
	var res struct {
		Files []companion.FileDiagnostics `json:"files"`
	}
	p := ide.DiagnosticsParams{Path: path, Settle: int(settle / time.Millisecond)}
	if err := c.Call(ctx, MethodDiagnostics, p, &res); err != nil {
		return nil, err
	}
	return res.Files, nil
}
