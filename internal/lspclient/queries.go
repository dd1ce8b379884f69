package lspclient

import (
	"context"
	"encoding/json"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
)

// The questions of codeintel.Source, asked of this server. The document
// asked about must be open (Open); a capability the server does not
// offer is codeintel.ErrUnsupported.

func posOf(at codeintel.DocPos) posParams {
	return posParams{TextDocument: textDocumentID{URI: URI(at.Path)}, Position: at.Pos}
}

func (c *Client) locations(ctx context.Context, capability, method string, params any) ([]codeintel.Location, error) {
	if !c.Offers(capability) {
		return nil, codeintel.ErrUnsupported
	}
	var raw json.RawMessage
	if err := c.request(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	return decodeLocations(raw)
}

// Definition asks textDocument/definition.
func (c *Client) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return c.locations(ctx, "definitionProvider", "textDocument/definition", posOf(at))
}

// Implementations asks textDocument/implementation.
func (c *Client) Implementations(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return c.locations(ctx, "implementationProvider", "textDocument/implementation", posOf(at))
}

// References asks textDocument/references, the declaration included.
func (c *Client) References(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	p := struct {
		posParams
		Context struct {
			IncludeDeclaration bool `json:"includeDeclaration"`
		} `json:"context"`
	}{posParams: posOf(at)}
	p.Context.IncludeDeclaration = true
	return c.locations(ctx, "referencesProvider", "textDocument/references", p)
}

// Hover asks textDocument/hover.
func (c *Client) Hover(ctx context.Context, at codeintel.DocPos) (codeintel.Hover, error) {
	if !c.Offers("hoverProvider") {
		return codeintel.Hover{}, codeintel.ErrUnsupported
	}
	var h *wireHover
	if err := c.request(ctx, "textDocument/hover", posOf(at), &h); err != nil || h == nil {
		return codeintel.Hover{}, err
	}
	return codeintel.Hover{Text: h.text(), Range: h.Range}, nil
}

// DocumentSymbols asks textDocument/documentSymbol.
func (c *Client) DocumentSymbols(ctx context.Context, path string) ([]codeintel.Symbol, error) {
	if !c.Offers("documentSymbolProvider") {
		return nil, codeintel.ErrUnsupported
	}
	var ws []wireSymbol
	p := map[string]any{"textDocument": textDocumentID{URI: URI(path)}}
	if err := c.request(ctx, "textDocument/documentSymbol", p, &ws); err != nil {
		return nil, err
	}
	return symbols(ws, path), nil
}

// WorkspaceSymbols asks workspace/symbol.
func (c *Client) WorkspaceSymbols(ctx context.Context, query string) ([]codeintel.Symbol, error) {
	if !c.Offers("workspaceSymbolProvider") {
		return nil, codeintel.ErrUnsupported
	}
	var ws []wireSymbol
	if err := c.request(ctx, "workspace/symbol", map[string]any{"query": query}, &ws); err != nil {
		return nil, err
	}
	return symbols(ws, ""), nil
}

// prepare asks textDocument/prepareCallHierarchy.
func (c *Client) prepare(ctx context.Context, at codeintel.DocPos) ([]wireCallItem, error) {
	if !c.Offers("callHierarchyProvider") {
		return nil, codeintel.ErrUnsupported
	}
	var items []wireCallItem
	err := c.request(ctx, "textDocument/prepareCallHierarchy", posOf(at), &items)
	return items, err
}

// IncomingCalls asks the call hierarchy who calls the function at a
// position.
func (c *Client) IncomingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	items, err := c.prepare(ctx, at)
	if err != nil {
		return nil, err
	}
	var out []codeintel.Call
	for _, it := range items {
		var calls []wireIncoming
		if err := c.request(ctx, "callHierarchy/incomingCalls", map[string]any{"item": it}, &calls); err != nil {
			return nil, err
		}
		out = append(out, incoming(calls)...)
	}
	return out, nil
}

// OutgoingCalls asks the call hierarchy what the function at a position
// calls.
func (c *Client) OutgoingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	items, err := c.prepare(ctx, at)
	if err != nil {
		return nil, err
	}
	var out []codeintel.Call
	for _, it := range items {
		var calls []wireOutgoing
		if err := c.request(ctx, "callHierarchy/outgoingCalls", map[string]any{"item": it}, &calls); err != nil {
			return nil, err
		}
		out = append(out, outgoing(calls, it.URI)...)
	}
	return out, nil
}

// Request sends one request of ide.LSPMethods as it came and returns the
// server's result as it sent it: codeintel.ErrUnsupported when the
// server does not offer it. The document it is about must be open.
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	capability := ide.LSPCapability(method)
	if capability == "" || !c.Offers(capability) {
		return nil, codeintel.ErrUnsupported
	}
	var raw json.RawMessage
	if err := c.request(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return raw, nil
}
