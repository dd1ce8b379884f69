package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// goFixture is the fixture's workspace holding the Go shop (greet,
// store, main), with gopls on PATH for gemkit mcp.
func goFixture(t *testing.T) *fixture {
	t.Helper()
	codeinteltest.Gopls(t)
	f := newFixture(t)
	codeinteltest.Copy(t, "go", f.ws)
	t.Cleanup(func() { codeinteltest.WaitGone(t, f.ws, "gopls") })
	return f
}

// definitionAnswer is the answer of code_definition {symbol: Greet,
// file: main.go} in the Go shop: the definition found from a call site.
const definitionAnswer = "Greet (used at main.go:15:20) is defined at:\ngreet/greet.go:16:6: func Greet(name string) string {"

// TestCodeIntelGeminiCLI: the real Gemini CLI calls code_definition
// through gemkit mcp, by name from a call site, and the answer reaches
// the model; when the CLI exits, the broker and gopls go with it.
func TestCodeIntelGeminiCLI(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := goFixture(t)
	model, err := fakemodel.Start(
		fakemodel.Call("mcp_gemkit_code_definition", map[string]any{"symbol": "Greet", "file": "main.go"}),
		fakemodel.Text("Found it."),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	writeGeminiSettings(t, f, nil)
	out, err := runGemini(t, f, node, interop, model.URL, "Where is Greet defined?")
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	turns := model.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d model turns, want 2\n%s", len(turns), out)
	}
	first, _ := turns[0].Generate()
	if !strings.Contains(" "+strings.Join(first.FunctionNames(), " ")+" ", " mcp_gemkit_code_definition ") {
		t.Fatalf("the CLI did not offer code_definition: %v", first.FunctionNames())
	}
	if !strings.Contains(first.Text(), "Code intelligence: the code_* tools") {
		t.Errorf("the server's instructions do not speak of the code tools")
	}
	second, _ := turns[1].Generate()
	if !responseContains(second, "mcp_gemkit_code_definition", definitionAnswer) {
		t.Errorf("the definition did not reach the model: %+v", second.FunctionResponses())
	}
}

// writeGeminiSettings writes Gemini CLI's settings for the fixture, with
// gemkit mcp as its MCP server and hooks, when given.
func writeGeminiSettings(t *testing.T, f *fixture, hooks map[string]any) {
	t.Helper()
	settings := map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"general":    map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"mcpServers": map[string]any{"gemkit": map[string]any{"command": f.bin, "args": []string{"mcp"}}},
	}
	if hooks != nil {
		settings["hooks"] = hooks
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), string(b), 0o600)
}

// runGemini runs `gemini -p prompt --yolo` in the fixture's workspace
// against the scripted model, and returns its output.
func runGemini(t *testing.T, f *fixture, node, interop, modelURL, prompt string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := f.headlessGemini(ctx, node, interop, modelURL, prompt)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestCodeIntelGeminiHook: Gemini CLI's AfterTool hook runs `gemkit
// codeintel hook` after write_file; the error the edit brought into the
// file that uses the changed function reaches the model with
// write_file's result, as Gemini CLI 0.61 appends a hook's
// additionalContext (packages/core/src/core/coreToolHookTriggers.ts).
func TestCodeIntelGeminiHook(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := goFixture(t)
	old, _ := os.ReadFile(filepath.Join(f.ws, "greet", "greet.go"))
	edited := strings.Replace(string(old), "func Greet(name string) string {", "func Greet(name, lang string) string {", 1)
	model, err := fakemodel.Start(
		fakemodel.Call("write_file", map[string]any{"file_path": filepath.Join(f.ws, "greet", "greet.go"), "content": edited}),
		fakemodel.Text("Changed."),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	writeGeminiSettings(t, f, map[string]any{"AfterTool": []any{map[string]any{
		"matcher": "^(write_file|replace)$",
		"hooks":   []any{map[string]any{"type": "command", "command": f.bin + " codeintel hook --timeout 55s", "timeout": 60000}},
	}}})
	out, err := runGemini(t, f, node, interop, model.URL, "Give Greet a language.")
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	turns := model.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d model turns, want 2\n%s", len(turns), out)
	}
	second, _ := turns[1].Generate()
	want := "gopls reports 1 new problem after this edit of greet/greet.go:\nmain.go:15:33: error: not enough arguments in call to greet.Greet"
	if !responseContains(second, "write_file", want) {
		t.Errorf("the edit's new problem did not reach the model with write_file's result: %+v\n%s", second.FunctionResponses(), out)
	}
}

// TestCodeIntelTwoAgents: two gemkit mcp processes in one workspace (two
// agents) start one gopls; both are answered; when both clients go, the
// broker and gopls go.
func TestCodeIntelTwoAgents(t *testing.T) {
	t.Parallel()
	f := goFixture(t)
	a := startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws)
	b := startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws)
	done := make(chan toolResult, 2)
	for _, c := range []*sdkClient{a, b} {
		go func() {
			done <- c.call(map[string]any{"op": "callTool", "name": "code_definition", "args": map[string]any{"symbol": "Greet", "file": "main.go"}})
		}()
	}
	for range 2 {
		if r := <-done; r.IsError || !strings.Contains(r.text(), definitionAnswer) {
			t.Fatalf("answer: %+v", r)
		}
	}
	if n := codeinteltest.Procs("gopls", f.ws); len(n) != 1 {
		t.Fatalf("%d gopls run for the workspace, want 1", len(n))
	}
	if n := codeinteltest.Brokers(f.ws); len(n) != 1 {
		t.Fatalf("%d brokers run for the workspace, want 1", len(n))
	}
	a.in.Close()
	waitOrKill(a.cmd)
	// The other agent still asks: the servers stay.
	r := b.call(map[string]any{"op": "callTool", "name": "code_references", "args": map[string]any{"symbol": "Store.Total"}})
	if r.IsError || !strings.Contains(r.text(), "2 references to Store.Total") {
		t.Fatalf("after the first agent went: %+v", r)
	}
	b.in.Close()
	waitOrKill(b.cmd)
	codeinteltest.WaitGone(t, f.ws, "gopls")
}

// TestCodeIntelClaudeCode: the real Claude Code asks code_references
// through gemkit mcp and the answer reaches its model.
func TestCodeIntelClaudeCode(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	f := goFixture(t)
	name := "mcp__gemkit__code_references"
	model := claudetest.StartModel(t, claudetest.CallTool(name, map[string]any{"symbol": "Store.Total"}, "references to Store.Total", "Two uses."))
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	cmd := f.headlessClaude(context.Background(), claude, f.claudeConfig(t), "Where is Store.Total used?", env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Two uses.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	found := false
	for _, r := range model.Requests() {
		last := r.LastUser()
		found = found || (strings.Contains(last, "2 references to Store.Total") && strings.Contains(last, "15:38: fmt.Println(greet.Greet("))
	}
	if !found {
		t.Errorf("the references did not reach the model")
	}
}

// TestCodeIntelCodex: the real Codex asks code_hover through gemkit mcp
// and the answer reaches its model.
func TestCodeIntelCodex(t *testing.T) {
	t.Parallel()
	f := goFixture(t)
	api := codexCallOnce(t, "code_hover", `{"symbol":"Greet"}`, "It greets.")
	out := runCodex(t, f, api, "What does Greet do?")
	if !strings.Contains(out, "It greets.") {
		t.Fatalf("codex exec did not end with the model's answer:\n%s", out)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2\n%s", len(reqs), out)
	}
	in, _ := json.Marshal(reqs[1]["input"])
	var s string
	if got := unquoteAll(in, &s); !strings.Contains(got, "Greet greets name in English.") {
		t.Errorf("the hover did not reach the model: %s", in)
	}
}

// codeToolNames are the code-intelligence tools gemkit mcp lists by
// default, before the extensions' (tools/list is sorted by name).
const codeToolNames = "code_calls code_definition code_diagnostics code_hover code_implementations code_references code_symbols code_type_definition"

// extensionTools checks that a tools/list of gemkit mcp begins with the
// code-intelligence tools, and returns the rest.
func extensionTools(t *testing.T, tools []listedTool) []listedTool {
	t.Helper()
	n := len(strings.Fields(codeToolNames))
	var names []string
	for i := 0; i < n && i < len(tools); i++ {
		names = append(names, tools[i].Name)
	}
	if got := strings.Join(names, " "); got != codeToolNames {
		t.Errorf("the code-intelligence tools are not listed first: %s", got)
		return tools
	}
	return tools[n:]
}
