package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestClaudeCodeSwitchedServer runs the real Claude Code 2.1.330 with
// the same `gemkit mcp` entry as Gemini CLI: an installed Gemini CLI
// extension's MCP server, switched to gemkit, is served to it in the
// sandbox. The model loads the server's tool with ToolSearch and calls
// it; the server reads the workspace, and its answer reaches the model.
func TestClaudeCodeSwitchedServer(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	gemkittest.Interop(t) // node, for the server
	f := newFixture(t)
	fixture := serverFixture(t)
	f.link(t, "fixext", `{"name": "fixext", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": fixture})
	if out, err := f.gemkit("extensions", "sandbox", "fixext"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	marker := filepath.Join(f.ws, "marker.txt")
	writeFile(t, marker, "workspace-marker-5523", 0o644)
	name := "mcp__gemkit__fixext_read"
	model := claudetest.StartModel(t, claudetest.CallTool(name, map[string]any{"path": marker}, "workspace-marker-5523", "The marker was read."))
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	cmd := f.headlessClaude(context.Background(), claude, f.claudeConfig(t, "--code-intel=false"), "Read the marker file.", env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "The marker was read.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	called := false
	for _, r := range model.Requests() {
		called = called || strings.Contains(r.LastUser(), "workspace-marker-5523")
	}
	if !called {
		t.Errorf("the server's answer never reached the model (%d requests)", len(model.Requests()))
	}
}
