package acp

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/model"
)

// TestShortName: an MCP tool may be called by its own name, without
// mcp_<server>_; a name two servers' tools share stands for both, which
// the agent answers with both.
func TestShortName(t *testing.T) {
	tl := &mcpTools{byName: map[string]mcpTool{
		"mcp_a_echo": {server: "a", tool: "echo"},
		"mcp_b_echo": {server: "b", tool: "echo"},
		"mcp_a_ping": {server: "a", tool: "ping"},
	}}
	for _, n := range []string{"mcp_a_echo", "mcp_b_echo", "mcp_a_ping"} {
		tl.decls = append(tl.decls, model.ToolDecl{Name: n})
	}
	for short, want := range map[string]string{"ping": "mcp_a_ping", "echo": "mcp_a_echo mcp_b_echo", "pong": "", "mcp_a_ping": ""} {
		if got := strings.Join(tl.ShortName(short), " "); got != want {
			t.Errorf("ShortName(%q) = %q, want %q", short, got, want)
		}
	}
}
