package companion

// The MCP the companion speaks, on both its Gemini-side endpoint (/mcp over
// Streamable HTTP, /stream over WebSocket) and Claude Code's WebSocket:
// initialize, tools/list, tools/call and ping, answered here on
// internal/jsonrpc's messages. The companion's own notifications
// (ide/contextUpdate, ide/diffAccepted, …) go out through the session
// outboxes (sessions.go) and the WebSocket peers; an MCP SDK could not send
// them (go-sdk#745), and needs nothing else of an SDK.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// mcpTool is one tool of an endpoint.
type mcpTool struct {
	name, description string
	schema            json.RawMessage
	call              func(ctx context.Context, args map[string]any) (*callResult, error)
}

// callResult is a tools/call result: text parts, and whether the call
// failed.
type callResult struct {
	Content []textPart `json:"content"`
	IsError bool       `json:"isError,omitempty"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolError is a failed call's result, in words.
func toolError(msg string) *callResult {
	return &callResult{Content: []textPart{{"text", msg}}, IsError: true}
}

// textResult is a result of the texts, one part each.
func textResult(texts ...string) *callResult {
	res := &callResult{Content: make([]textPart, 0, len(texts))}
	for _, t := range texts {
		res.Content = append(res.Content, textPart{"text", t})
	}
	return res
}

// mcpServer answers the MCP requests of one endpoint.
type mcpServer struct {
	version string
	// tools are the tools listed and callable now.
	tools func() []mcpTool
}

// sessionKey carries the /mcp session of a request in its context.
type sessionKey struct{}

// sessionOf is the /mcp session id a request came in, "" when none.
func sessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// response is a JSON-RPC response of ours.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// handle answers one request (nil for a notification, which needs no
// answer).
func (m *mcpServer) handle(ctx context.Context, req rpcMessage) *response {
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil
	}
	res, err := m.answer(ctx, req)
	out := &response{JSONRPC: "2.0", ID: req.ID}
	if err != nil {
		out.Error = err
	} else {
		out.Result = res
	}
	return out
}

func (m *mcpServer) answer(ctx context.Context, req rpcMessage) (any, *jsonrpc.Error) {
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := mcpwire.Decode(req.Params, &p); err != nil {
			return nil, jsonrpc.InvalidParams(req.Method, jsonrpc.Problem(err))
		}
		// The companion speaks mcpwire's revisions. A client that asks
		// for another one is answered with ide.ProtocolVersion, the
		// revision the real clients speak to an IDE companion, rather
		// than the newest: the TypeScript SDK 1.23 refuses 2025-11-25 as
		// an answer.
		return map[string]any{
			"protocolVersion": mcpwire.Negotiate(p.ProtocolVersion, ide.ProtocolVersion),
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]string{"name": ide.ServerName, "version": m.version},
		}, nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		type listed struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		tools := m.tools()
		out := make([]listed, 0, len(tools))
		for _, t := range tools {
			out = append(out, listed{t.name, t.description, t.schema})
		}
		slices.SortFunc(out, func(a, b listed) int { return strings.Compare(a.Name, b.Name) })
		return map[string]any{"tools": out}, nil
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		// By their exact names, as the real clients' SDKs read them.
		if err := mcpwire.Decode(req.Params, &p); err != nil {
			return nil, jsonrpc.InvalidParams(req.Method, jsonrpc.Problem(err))
		}
		tools := m.tools()
		i := slices.IndexFunc(tools, func(t mcpTool) bool { return t.name == p.Name })
		if i < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool '%s' not found: tool not found", p.Name)}
		}
		var args map[string]any
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
			if err := json.Unmarshal(p.Arguments, &args); err != nil {
				return toolError(fmt.Sprintf("%s: the arguments are not a JSON object: %s", p.Name, jsonrpc.Problem(err))), nil
			}
		}
		res, err := tools[i].call(ctx, args)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return res, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
}
