package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestClaudeCodeSearchesServerTools: the real Claude Code 2.1.330 keeps
// gemkit mcp's tools behind its tool search, which takes a tool's name
// apart only at _ and . and finds nothing for a name written another
// way: postman's server, switched to gemkit (pinned from a loopback
// registry), serves getEnabledTools as postman-api-mcp_getEnabledTools,
// and a model that searches for it as postman_api_mcp_getEnabledTools
// (as Codex names it, and as gemkit's summary says a client may) or for
// the extension as postman_api_mcp was answered "No matching deferred
// tools found". gemkit gives each server tool a search hint with those
// forms (serverToolHint); the model finds the tool, loads it, calls it,
// and the server's answer reaches it.
func TestClaudeCodeSearchesServerTools(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Claude Code and postman's server installed from a loopback registry")
	claude := claudetest.Binary(t)
	f := newFixture(t)
	postman := npxExtensions[1]
	linkNPX(t, f, publishedRegistry(t, f), []npxExtension{postman})
	tool := "mcp__gemkit__" + postman.name + "_" + postman.tool
	// The extension's name, then the tool's, each written with _ for -:
	// one word each, which only the hint holds.
	searches := []string{"postman_api_mcp", "postman_api_mcp_getEnabledTools"}
	var mu sync.Mutex
	var found []string // what each search answered
	const done = "The tool answered."
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := r.LastUser()
		if searched(r) > len(found) {
			found = append(found, last) // the answer of the last search
		}
		switch {
		case strings.Contains(last, postman.answer):
			return claudetest.Reply{Text: done}
		case len(found) < len(searches):
			return claudetest.Reply{Tool: "ToolSearch", Input: map[string]any{"query": searches[len(found)], "max_results": 5}}
		case r.HasTool(tool):
			return claudetest.Reply{Tool: tool, Input: postman.args}
		}
		return claudetest.Reply{Text: tool + " was not loaded"}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "What tools does postman have enabled?", env).CombinedOutput()
	mu.Lock()
	defer mu.Unlock()
	for i, q := range searches {
		want := `"tool_name":"mcp__gemkit__` + postman.name + "_"
		if i == 1 {
			want = tool // loaded now, or already by the first search
		}
		if i >= len(found) || !strings.Contains(found[i], want) {
			got := "nothing"
			if i < len(found) {
				got = found[i]
			}
			t.Errorf("ToolSearch %q answered %s; want %s found", q, got, want)
		}
	}
	if err != nil || !strings.Contains(string(out), done) {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
}

// searched is the number of ToolSearch calls the model made before r.
func searched(r *claudetest.Request) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" && strings.Contains(string(m.Content), `"name":"ToolSearch"`) {
			n++
		}
	}
	return n
}
