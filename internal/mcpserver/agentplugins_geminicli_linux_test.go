package mcpserver_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestGeminiCLIAgentPlugin runs the real Gemini CLI 0.61 (offline,
// against the scripted model) with gemkit mcp in its settings and an
// Agent Plugins 1.0 plugin installed by `gemkit extensions install`
// beside the fixture's extensions: the model reads the plugin's skill
// with read_doc and calls its server's tool, which answers from gemkit's
// sandbox.
func TestGeminiCLIAgentPlugin(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := newFixture(t)
	src := pluginSource(t, filepath.Join(f.root, "src", "hello-plugin"), nil)
	if out, err := f.gemkit("extensions", "install", "--consent", src); err != nil {
		t.Fatalf("gemkit extensions install: %v\n%s", err, out)
	}
	settings := filepath.Join(f.home, ".gemini", "settings.json")
	writeFile(t, settings, `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
 "mcpServers": {"gemkit": {"command": "`+f.bin+`", "args": ["mcp"]}}}`, 0o600)
	model := scriptedModel(t,
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "hello-plugin", "name": "skill:greet"}),
		fakemodel.Call("mcp_gemkit_hello-plugin_hello", map[string]any{"who": "Ada"}),
		fakemodel.Text("All done."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stdout, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Greet Ada."), model)
	turns := wantTurns(t, model, 3, runErr, report)
	first, err := turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.Text(), "- **hello-plugin**: Greets people, from an Agent Plugins 1.0 plugin.") || !strings.Contains(first.Text(), "`greet`: Greet the person warmly from the hello plugin.") {
		t.Errorf("the first request does not carry the plugin and its skill in gemkit's summary:\n%.4000s", first.Text())
	}
	second, _ := turns[1].Generate()
	if !responseContains(second, "mcp_gemkit_read_doc", "hello-skill-5093") {
		t.Errorf("the skill was not read: %+v\n%s", second.FunctionResponses(), report())
	}
	third, _ := turns[2].Generate()
	if !responseContains(third, "mcp_gemkit_hello-plugin_hello", "hello-plugin-7741 greets Ada") {
		t.Errorf("the server's answer did not reach the model: %+v\n%s", third.FunctionResponses(), report())
	}
	if !strings.Contains(stdout, "All done.") {
		t.Errorf("no final answer:\n%s", report())
	}
	// Gemini CLI 0.61 reads every folder of ~/.gemini/extensions: one
	// without gemini-extension.json costs every start a warning
	// (ExtensionManager.loadExtension). The plugin is kept elsewhere,
	// and Gemini CLI still loads the fixture's extensions there.
	if r := report(); strings.Contains(r, "Skipping extension") {
		t.Errorf("Gemini CLI came upon the plugin's folder:\n%s", r)
	}
	if !strings.Contains(first.Text(), "<name>triage</name>") {
		t.Errorf("Gemini CLI no longer loads the fixture's extension's skill")
	}
	list := exec.CommandContext(ctx, node, geminiJS(interop), "extensions", "list")
	list.Dir, list.Env = f.ws, append(f.env(), "NO_COLOR=1", geminiOneProcess)
	if out, err := list.CombinedOutput(); err != nil || strings.Contains(string(out), "hello-plugin") || !strings.Contains(string(out), "demo") {
		t.Errorf("gemini extensions list: %v\n%s", err, out)
	}
}
