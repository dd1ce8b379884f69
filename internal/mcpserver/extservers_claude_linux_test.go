package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestClaudeCodeAnswersExtensionQuestion runs the real Claude Code
// 2.1.330 with `gemkit mcp`: a sandboxed extension server's form question
// during a call reaches it (it declares form and URL elicitation to a
// stdio server: its client capabilities, Fin and fms in the CLI), below
// gemkit's line naming the extension and server, and its answer reaches
// the server, whose result reaches the model. It speaks 2026-07-28 to
// gemkit mcp (server/discover first, as seen on the wire), so the question
// goes as the call's input_required answer and the answer comes with its
// retry. Run with -p, Claude Code
// hands an MCP server's question to its Elicitation hooks (print mode's
// handler, runElicitationHooks): the hook here is the person, recording
// the question and accepting the form. ENABLE_TOOL_SEARCH=false has the
// CLI offer the MCP tools directly, not through ToolSearch. As root and
// as uid 65534 (Claude Code, gemkit and the server).
func TestClaudeCodeAnswersExtensionQuestion(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	gemkittest.Interop(t) // node, for the server
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) { claudeAnswers(t, claude, unprivileged) })
}

func claudeAnswers(t *testing.T, claude string, unprivileged bool) {
	f := newFixture(t)
	askingExtension(t, f)
	model := claudetest.StartModel(t, claudetest.CallTool("mcp__gemkit__asker_ask", askArgs, `\"colour\":\"green\"`, "The colour is green."))
	home := filepath.Join(f.root, "claude")
	env := claudetest.Home(t, home, model, gemkittest.ClosedPort(t), f.ws)
	asked := filepath.Join(f.root, "asked.json")
	hook := filepath.Join(f.root, "hook.sh")
	writeFile(t, hook, "#!/bin/sh\ncat > "+asked+"\nprintf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"Elicitation\",\"action\":\"accept\",\"content\":{\"colour\":\"green\"}}}'\n", 0o755)
	writeFile(t, filepath.Join(home, ".claude", "settings.json"), `{"permissions": {"defaultMode": "default"}, "autoUpdates": false,
 "hooks": {"Elicitation": [{"matcher": "gemkit", "hooks": [{"type": "command", "command": "`+hook+`"}]}]}}`, 0o600)
	if unprivileged {
		asUnprivileged(t, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := f.asUser(f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Ask me for a colour.", append(env, "ENABLE_TOOL_SEARCH=false")))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "The colour is green.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	b, err := os.ReadFile(asked)
	if err != nil {
		t.Fatalf("the hook was never asked: %v", err)
	}
	var in struct {
		Server  string         `json:"mcp_server_name"`
		Message string         `json:"message"`
		Mode    string         `json:"mode"`
		Schema  map[string]any `json:"requested_schema"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	checkAsked(t, []elicitation{{Mode: in.Mode, Message: in.Message, RequestedSchema: in.Schema}})
	if in.Server != "gemkit" {
		t.Errorf("asked for the server %q", in.Server)
	}
}
