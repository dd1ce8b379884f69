package mcpserver_test

import (
	"encoding/json"
	"os"
	"os/exec"
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
	fixture, err := os.ReadFile(filepath.Join("..", "extmcp", "testdata", "fixture.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	f.link(t, "fixext", `{"name": "fixext", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": string(fixture)})
	if out, err := f.gemkit("extensions", "sandbox", "fixext"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	marker := filepath.Join(f.ws, "marker.txt")
	writeFile(t, marker, "workspace-marker-5523", 0o644)
	name := "mcp__gemkit__fixext_read"
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		switch {
		case strings.Contains(r.LastUser(), "workspace-marker-5523"):
			return claudetest.Reply{Text: "The marker was read."}
		case r.HasTool(name):
			return claudetest.Reply{Tool: name, Input: map[string]any{"path": marker}}
		default:
			return claudetest.Reply{Tool: "ToolSearch", Input: map[string]any{"query": "select:" + name, "max_results": 5}}
		}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	cfg := filepath.Join(f.root, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gemkit": map[string]any{
		"command": f.bin, "args": []string{"mcp", "--code-intel=false", "--workspace", f.ws}, "env": map[string]string{"HOME": f.home}}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(claude, "-p", "--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__gemkit", "--", "Read the marker file.")
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), env...)
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
