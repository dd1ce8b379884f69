package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// lackingServer is an extension whose one MCP server, extmcp's fixture,
// declares every capability of MCP's and lacks one optional method, the
// way how says (testdata/fixture.mjs: notfound, error, silent).
type lackingServer struct{ ext, method, how string }

// lackingServers lack each optional method in turn, each way a real
// server lacks one among them: mcp-server-kubernetes 4.1.7 declares
// resources and answers resources/templates/list with -32601 Method not
// found.
var lackingServers = []lackingServer{
	{"lacktpl", "resources/templates/list", "notfound"},
	{"lackres", "resources/list", "error"},
	{"lackprm", "prompts/list", "silent"},
	{"lackcmp", "completion/complete", "notfound"},
	{"lacklog", "logging/setLevel", "silent"},
	{"lacksub", "resources/subscribe", "error"},
}

// marker is what the workspace file of l's row holds, which its read
// answers.
func (l lackingServer) marker() string { return "answer-of-" + l.ext + "-5170" }

// switchLacking links and switches the lacking servers' extensions, and
// writes each one's marker file in the workspace.
func switchLacking(t *testing.T, f *fixture) {
	t.Helper()
	fixture := serverFixture(t)
	for _, l := range lackingServers {
		manifest, _ := json.Marshal(map[string]any{"name": l.ext, "version": "1.0.0", "mcpServers": map[string]any{
			"srv" + l.ext: map[string]any{"command": "node", "args": []string{"${extensionPath}/fixture.mjs"}, "env": map[string]string{
				"FIXTURE_CAPS": `{"tools":{},"resources":{"subscribe":true},"prompts":{},"logging":{},"completions":{}}`,
				"FIXTURE_LACK": l.method + "=" + l.how,
			}}}})
		f.link(t, l.ext, string(manifest), map[string]string{"fixture.mjs": fixture})
		if out, err := f.gemkit("extensions", "sandbox", l.ext); err != nil {
			t.Fatalf("gemkit extensions sandbox %s: %v\n%s", l.ext, err, out)
		}
		writeFile(t, filepath.Join(f.ws, l.ext+".txt"), l.marker(), 0o644)
	}
}

// TestGeminiCLILackingServers: the real Gemini CLI 0.61, through gemkit
// mcp, is offered every tool of switched servers that each lack an
// optional method of MCP (lackingServers), and calls one of each; no
// placeholder stands in for any. Before, gemkit offered only
// …_unavailable for a server that could not list what it declared.
func TestGeminiCLILackingServers(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := newFixture(t)
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), fmt.Sprintf(`{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "mcpServers": {"gemkit": {"command": %q, "args": ["mcp", "--code-intel=false"], "trust": true}}
}
`, f.bin), 0o600)
	switchLacking(t, f)
	var script []fakemodel.Reply
	for _, l := range lackingServers {
		script = append(script, fakemodel.Call("mcp_gemkit_"+l.ext+"_read", map[string]any{"path": filepath.Join(f.ws, l.ext+".txt")}))
	}
	model := scriptedModel(t, append(script, fakemodel.Text("All done."))...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Read each marker."), model)
	turns := wantTurns(t, model, len(lackingServers)+1, runErr, report)
	first, err := turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	names := " " + strings.Join(first.FunctionNames(), " ") + " "
	if strings.Contains(names, "_unavailable ") {
		t.Errorf("Gemini CLI was offered a placeholder:%s", names)
	}
	for i, l := range lackingServers {
		for _, tool := range []string{"ok", "read", "hang"} {
			if want := "mcp_gemkit_" + l.ext + "_" + tool; !strings.Contains(names, " "+want+" ") {
				t.Errorf("%s (lacking %s, %s): Gemini CLI was not offered %s", l.ext, l.method, l.how, want)
			}
		}
		next, _ := turns[i+1].Generate()
		if !responseContains(next, "mcp_gemkit_"+l.ext+"_read", l.marker()) {
			t.Errorf("%s (lacking %s, %s): its answer did not reach the model: %+v", l.ext, l.method, l.how, next.FunctionResponses())
		}
	}
}

// TestClaudeCodeLackingServers: the real Claude Code 2.1.330, through
// gemkit mcp, finds (ToolSearch) and calls a tool of each switched
// server that lacks an optional method of MCP (lackingServers).
func TestClaudeCodeLackingServers(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	f := newFixture(t)
	switchLacking(t, f)
	// Each tool is loaded, then called; the last answer read ends it, as
	// does a tool that ToolSearch does not find at the second try.
	var mu sync.Mutex
	tries := map[string]int{}
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lackingServers {
			name := "mcp__gemkit__" + l.ext + "_read"
			switch {
			case strings.Contains(r.Raw, l.marker()):
				continue
			case !r.HasTool(name) && tries[name] == 2:
				return claudetest.Reply{Text: "ToolSearch did not find " + name + "."}
			case !r.HasTool(name):
				tries[name]++
				return claudetest.LoadTool(name)
			default:
				return claudetest.Reply{Tool: name, Input: map[string]any{"path": filepath.Join(f.ws, l.ext+".txt")}}
			}
		}
		return claudetest.Reply{Text: "Every marker was read."}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Read each marker.", env).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Every marker was read.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	var raw strings.Builder
	for _, r := range model.Requests() {
		raw.WriteString(r.LastUser())
	}
	for _, l := range lackingServers {
		if !strings.Contains(raw.String(), l.marker()) {
			t.Errorf("%s (lacking %s, %s): its answer never reached the model", l.ext, l.method, l.how)
		}
	}
}
