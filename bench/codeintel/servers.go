//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// The servers measured and how they are asked: gemkit, cclsp and a
// reference gemkit through the same MCP client, gopls directly through
// a minimal LSP client, the questions put to each and how a correct
// answer is recognized.

// server is one MCP server process with a lean client on its stdio.
type server struct{ *mcpline.Conn }

func (e *env) startGemkit() (*server, error) {
	return e.startServer(e.gemkit, "mcp", "--workspace", e.ws)
}

func (e *env) startCclsp() (*server, error) {
	return e.startServer(e.node, e.cclsp)
}

func (e *env) startRef() (*server, error) {
	return e.startServerEnv(e.refEnviron, e.ref, "mcp", "--workspace", e.ws)
}

func (e *env) startServer(name string, args ...string) (*server, error) {
	return e.startServerEnv(e.environ, name, args...)
}

func (e *env) startServerEnv(environ []string, name string, args ...string) (*server, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = e.ws
	cmd.Env = environ
	cmd.Stderr = io.Discard
	c, err := mcpline.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &server{c}, nil
}

// call calls a tool and returns its text.
func (s *server) call(tool string, args map[string]any) (string, error) {
	raw, err := s.Request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	json.Unmarshal(raw, &r)
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// The questions, the same for both where both can answer them.
var (
	gemkitDefByName = map[string]any{"symbol": "Greet", "file": "main.go"}
	gemkitDefByPos  = map[string]any{"file": "main.go", "line": 15, "column": 20}
	gemkitRefsByPos = map[string]any{"file": "greet/greet.go", "line": 16, "column": 6}
	gemkitFewByPos  = map[string]any{"file": "store/store.go", "line": 30, "column": 17}
	cclspFew        = map[string]any{"file_path": "store/store.go", "symbol_name": "Total", "symbol_kind": "method", "include_declaration": true}
	cclspDef        = map[string]any{"file_path": "greet/greet.go", "symbol_name": "Greet", "symbol_kind": "function"}
	cclspRefs       = map[string]any{"file_path": "greet/greet.go", "symbol_name": "Greet", "symbol_kind": "function", "include_declaration": true}
	// Hover of the function Greet and implementations of the interface
	// Greeter, by position (as cclsp takes them) and by name.
	gemkitHoverByPos  = map[string]any{"file": "greet/greet.go", "line": 16, "column": 6}
	gemkitHoverByName = map[string]any{"symbol": "Greet", "file": "greet/greet.go"}
	gemkitImplByPos   = map[string]any{"file": "greet/greet.go", "line": 5, "column": 6}
	gemkitImplByName  = map[string]any{"symbol": "Greeter", "file": "greet/greet.go"}
	cclspHover        = map[string]any{"file_path": "greet/greet.go", "line": 16, "character": 6}
	cclspImpl         = map[string]any{"file_path": "greet/greet.go", "line": 5, "character": 6}
)

// hoverOK and implOK recognize a correct hover and implementations
// answer, from either server.
func hoverOK(s string) bool { return strings.Contains(s, "func Greet(name string) string") }
func implOK(s string) bool {
	return strings.Contains(s, "greet.go:10") || strings.Contains(s, "greet.go:10:6")
}

// gemkitDefOK and cclspDefOK recognize a correct definition answer.
func gemkitDefOK(s string) bool { return strings.Contains(s, "greet/greet.go:16:6") }
func cclspDefOK(s string) bool  { return strings.Contains(s, "greet.go:16") }

// goplsDirect asks gopls directly, each request as lsp/request carries
// it, its answer read as internal/lspsource reads it.
type goplsDirect struct{ c *lspclient.Client }

func (g goplsDirect) ask(ctx context.Context, method string, at codeintel.DocPos, extra string) (json.RawMessage, error) {
	params := fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}%s}`, lspclient.URI(at.Path), at.Pos.Line, at.Pos.Character, extra)
	return g.c.Request(ctx, method, json.RawMessage(params))
}

func (g goplsDirect) locations(ctx context.Context, method string, at codeintel.DocPos, extra string) ([]codeintel.Location, error) {
	raw, err := g.ask(ctx, method, at, extra)
	if err != nil {
		return nil, err
	}
	return lspclient.DecodeLocations(raw)
}

func (g goplsDirect) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/definition", at, "")
}

func (g goplsDirect) References(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/references", at, `,"context":{"includeDeclaration":true}`)
}

func (g goplsDirect) Implementations(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return g.locations(ctx, "textDocument/implementation", at, "")
}

func (g goplsDirect) Hover(ctx context.Context, at codeintel.DocPos) (codeintel.Hover, error) {
	raw, err := g.ask(ctx, "textDocument/hover", at, "")
	if err != nil {
		return codeintel.Hover{}, err
	}
	return lspclient.DecodeHover(raw)
}
