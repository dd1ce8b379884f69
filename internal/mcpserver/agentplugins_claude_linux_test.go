package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestClaudeCodeAgentPlugin runs the real Claude Code 2.1.330 with gemkit
// mcp as its one MCP server and an Agent Plugins 1.0 plugin installed by
// `gemkit extensions install`: the model reads the plugin's skill with
// read_doc, then calls its node server's tool, which answers from
// gemkit's sandbox. ENABLE_TOOL_SEARCH=false has the CLI offer the MCP
// tools directly. As root and as uid 65534 (Claude Code, gemkit and the
// server).
func TestClaudeCodeAgentPlugin(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	gemkittest.Interop(t) // node, for the server
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) { claudeAgentPlugin(t, claude, unprivileged) })
}

func claudeAgentPlugin(t *testing.T, claude string, unprivileged bool) {
	f := newFixture(t)
	src := pluginSource(t, filepath.Join(f.root, "src", "hello-plugin"), nil)
	if out, err := f.gemkit("extensions", "install", "--consent", src); err != nil {
		t.Fatalf("gemkit extensions install: %v\n%s", err, out)
	}
	const hello, readDoc = "mcp__gemkit__hello-plugin_hello", "mcp__gemkit__read_doc"
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		switch last := r.LastUser(); {
		case strings.Contains(last, "hello-plugin-7741 greets Ada"):
			return claudetest.Reply{Text: "Ada was greeted."}
		case strings.Contains(last, "hello-skill-5093"):
			return claudetest.Reply{Tool: hello, Input: map[string]any{"who": "Ada"}}
		default:
			return claudetest.Reply{Tool: readDoc, Input: map[string]any{"extension": "hello-plugin", "name": "skill:greet"}}
		}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	if unprivileged {
		asUnprivileged(t, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := f.asUser(f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Greet Ada.", append(env, "ENABLE_TOOL_SEARCH=false")))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Ada was greeted.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	var read, called, offered bool
	for _, r := range model.Requests() {
		read = read || strings.Contains(r.LastUser(), "hello-skill-5093")
		called = called || strings.Contains(r.LastUser(), "hello-plugin-7741 greets Ada")
		offered = offered || r.HasTool(hello) && strings.Contains(r.Raw, "Greet the person warmly from the hello plugin.")
	}
	if !read || !called || !offered {
		t.Errorf("skill read %v, tool answered %v, tool and skill offered %v (%d requests)", read, called, offered, len(model.Requests()))
	}
}
