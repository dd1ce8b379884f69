package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// TestUnloadedServerTold: a server switched to gemkit whose extension
// gemkit does not load (its settings file a link out of its folder,
// which Gemini CLI follows) is served by
// nobody, Gemini CLI's mcp.excluded naming it; gemkit mcp serves its
// placeholder, which tells the real Gemini CLI 0.61 and Claude Code
// 2.1.330 why and what to do. gemkit mcp listed nothing of it (the case
// of google-maps-platform, installed by Gemini CLI and switched).
func TestUnloadedServerTold(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	claude := claudetest.Binary(t)
	f := newFixture(t)
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), fmt.Sprintf(`{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "mcpServers": {"gemkit": {"command": %q, "args": ["mcp", "--code-intel=false"], "trust": true}}
}
`, f.bin), 0o600)
	// Installed by Gemini CLI: its copy, and its install metadata.
	dir := filepath.Join(f.home, ".gemini", "extensions", "gmp")
	const manifest = `{"name": "gmp", "version": "1.0.0",
 "mcpServers": {"maps": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`
	writeFile(t, filepath.Join(dir, "gemini-extension.json"), manifest, 0o644)
	writeFile(t, filepath.Join(dir, "fixture.mjs"), serverFixture(t), 0o644)
	writeFile(t, filepath.Join(dir, ".gemini-extension-install.json"), `{"source": "https://github.com/example/gmp", "type": "git"}`, 0o644)
	for _, args := range [][]string{{"extensions", "consent", "gmp", "--grant"}, {"extensions", "sandbox", "gmp"}} {
		if out, err := f.gemkit(args...); err != nil {
			t.Fatalf("gemkit %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Its settings a link out of its folder: Gemini CLI follows it,
	// gemkit does not, and so loads nothing of gmp.
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	const why = "the extension gmp is not one gemkit loads (settings cannot be read: "
	const back = "gemkit extensions sandbox gmp --off"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const placeholder = "mcp_gemkit_gmp_maps_unavailable"
	model := scriptedModel(t, fakemodel.Call(placeholder, map[string]any{}), fakemodel.Text("Told."))
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Find a place on the map."), model)
	turns := wantTurns(t, model, 2, runErr, report)
	first, _ := turns[0].Generate()
	if names := " " + strings.Join(first.FunctionNames(), " ") + " "; !strings.Contains(names, " "+placeholder+" ") {
		t.Errorf("Gemini CLI is not offered the placeholder: %s", names)
	}
	var s string
	if decls := unquoteAll(first.Tools[0], &s); !strings.Contains(decls, why) || !strings.Contains(decls, back) {
		t.Errorf("the placeholder's description does not say why, and what to do:\n%.3000s", decls)
	}
	second, _ := turns[1].Generate()
	if !responseContains(second, placeholder, why) || !responseContains(second, placeholder, back) {
		t.Errorf("the placeholder's answer did not reach the model: %+v\n%s", second.FunctionResponses(), report())
	}

	name := "mcp__gemkit__gmp_maps_unavailable"
	told := false
	cm := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		switch {
		case strings.Contains(r.LastUser(), why):
			told = told || strings.Contains(r.LastUser(), back)
			return claudetest.Reply{Text: "The map server is not served."}
		case r.HasTool(name):
			return claudetest.Reply{Tool: name, Input: map[string]any{}}
		default:
			return claudetest.LoadTool(name)
		}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), cm, gemkittest.ClosedPort(t), f.ws)
	cc := f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Find a place on the map.", env)
	if out, err := cc.CombinedOutput(); err != nil || !strings.Contains(string(out), "The map server is not served.") || !told {
		t.Errorf("claude -p: %v (told %v)\n%s", err, told, out)
	}
}
