package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// longTool is a tool whose exposed name, long-names_ and its own, is over
// 51 characters: with the 64-character limit of old, Claude Code's
// mcp__gemkit__ made it 66, which the model API refuses.
const longTool = "summarize_the_repository_history_by_author"

// TestClaudeCode runs the real Claude Code 2.1.330 (`claude -p
// --mcp-config`) with `gemkit mcp` as its MCP server against a scripted
// Anthropic API that, like the real one, refuses tool names over 64
// characters. Claude Code speaks 2026-07-28 and starts with
// server/discover: the summary must reach the model as the server's
// instructions. It defers MCP tools behind its ToolSearch: the model
// loads the long-named tool, calls it, and its output must reach the
// model.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	f := newFixture(t)
	f.link(t, "long-names", `{"name": "long-names", "version": "1.0.0", "description": "A tool with a long name.",
	 "tools": [{"name": "`+longTool+`", "description": "Summarizes the history.", "executable": "tools/sum.sh", "runtime": "shell",
	   "args": [{"name": "author", "type": "string"}]}]}`,
		map[string]string{"tools/sum.sh": "echo \"history-marker-7431 by $2\"\n"})
	name := "mcp__gemkit__" + disclosure.ExposedName("long-names", longTool)
	if len(name) > 64 {
		t.Fatalf("%s is over 64 characters", name)
	}
	model := claudetest.StartModel(t, claudetest.CallTool(name, map[string]any{"author": "ada"}, "history-marker-7431", "The history is summarized."))
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	cmd := f.headlessClaude(context.Background(), claude, f.claudeConfig(t), "Summarize the history by ada.", env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "The history is summarized.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	reqs := model.Requests()
	// Claude Code 2.1.330 puts the servers' instructions in the context
	// it sends with the first user turn, under "# MCP Server Instructions".
	var first struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal([]byte(reqs[0].Raw), &first)
	var context strings.Builder
	for _, m := range first.Messages {
		var blocks []struct{ Text string }
		json.Unmarshal(m.Content, &blocks)
		for _, bl := range blocks {
			context.WriteString(bl.Text)
		}
	}
	if c := context.String(); !strings.Contains(c, "## gemkit\n"+disclosure.Header) ||
		!strings.Contains(c, "`"+disclosure.ExposedName("long-names", longTool)+"(author: string)`: Summarizes the history.") {
		t.Errorf("the summary did not reach the model as gemkit's instructions:\n%s", c)
	}
	called := false
	for _, r := range reqs {
		called = called || strings.Contains(r.LastUser(), "history-marker-7431 by ada")
	}
	if !called {
		t.Errorf("the tool's output never reached the model (%d requests)", len(reqs))
	}
}

// TestClaudeCodeAsksConsent runs the real Claude Code 2.1.330 in tmux
// with `gemkit mcp` and a tool whose extension has no consent. Claude
// Code offers elicitation, so gemkit asks the person in Claude Code's own
// interface ("MCP server "gemkit" requests your input", Accept or
// Decline), never through the model: accepted, consent is recorded and
// the tool's output reaches the model; after `gemkit extensions consent
// --revoke`, the next call asks again and, declined, runs nothing. No
// request to the model carries the question.
func TestClaudeCodeAsksConsent(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	f := newFixture(t)
	name := "mcp__gemkit__gated_hello"
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		last := r.LastUser()
		switch {
		case strings.Contains(last, "the person declined"):
			return claudetest.Reply{Text: "DECLINED_SEEN"}
		case strings.Contains(last, "hello\n") || strings.Contains(last, `hello\n`):
			return claudetest.Reply{Text: "HELLO_SEEN"}
		case r.HasTool(name):
			return claudetest.Reply{Tool: name, Input: map[string]any{}}
		default:
			return claudetest.LoadTool(name)
		}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	cfg := f.claudeConfig(t)
	argv := append(append([]string{"env", "-i", "PATH=" + os.Getenv("PATH")}, env...),
		// The MCP server's tools are allowed without Claude Code's own
		// permission prompt, so that the question on screen is gemkit's.
		claude, "--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__gemkit")
	cc := gemkittest.StartTmux(t, f.root, f.ws, nil, 150, 50, argv...).Main()
	wait := func(what string, cond func(string) bool) { t.Helper(); gemkittest.WaitScreen(t, cc.Screen, what, cond) }
	claudetest.Input(t, cc)
	question := func(s string) bool {
		return strings.Contains(s, `MCP server “gemkit” requests your input`) &&
			strings.Contains(s, `Extension "gated" wants to run its tool gated_hello. Its tools may: read files in your home directory`) &&
			strings.Contains(s, "Accept") && strings.Contains(s, "Decline")
	}

	// answer picks choice in gemkit's question, pressing keys until the
	// question goes: it is drawn before it takes keys.
	answer := func(choice string) {
		t.Helper()
		wait("gemkit's question", question)
		gone := func() bool { return !question(cc.Screen()) }
		gemkittest.PressUntil(t, cc, "Right", choice+" chosen", func() bool {
			return gone() || strings.Contains(cc.Screen(), "❯ "+choice)
		})
		gemkittest.PressUntil(t, cc, "Enter", "the answer "+choice+" taken", gone)
	}

	claudetest.Ask(t, cc, model, "say hello with the gated tool")
	answer("Accept")
	wait("the tool's output to reach the model", func(s string) bool { return strings.Contains(s, "HELLO_SEEN") })
	if !consented(t, f) {
		t.Error("accepted in Claude Code, but no consent on record")
	}

	if out, err := f.gemkit("extensions", "consent", "gated", "--revoke"); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	claudetest.Ask(t, cc, model, "say hello again")
	answer("Decline")
	wait("the refusal to reach the model", func(s string) bool { return strings.Contains(s, "DECLINED_SEEN") })
	if consented(t, f) {
		t.Error("declined in Claude Code, but consent is on record")
	}
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, "wants to run its tool") {
			t.Errorf("a request to the model carries gemkit's question:\n%s", r.Raw)
		}
	}
}
