package mcpserver_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestOpenCode runs the real OpenCode 1.18.33 (`opencode run`, its native
// binary from npm, pinned in interop/opencode) offline, with `gemkit mcp`
// set up by docs/mcp.md's OpenCode block as written, against a scripted
// Chat Completions model. OpenCode starts the server in the project's
// folder and names its tools gemkit_<name>: the model calls demo_count as
// gemkit_demo_count, and the tool's output, which lists the workspace,
// must reach the model's next request. The session's title goes to a
// second scripted model, the configured small model, so that it takes no
// turn of the first one's script.
func TestOpenCode(t *testing.T) {
	t.Parallel()
	opencode := pinnedPeer(t, "opencode", "npm install --no-save", "OpenCode", "opencode-linux-x64/bin/opencode")
	f := newFixture(t)
	const tool = "gemkit_demo_count"
	model, err := fakemodel.StartOpenAI(fakemodel.Call(tool, map[string]any{"word": "hi", "times": 2}), fakemodel.Text("Counted."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	out := runOpenCode(t, f, opencode, model, "Say hi twice.")
	if !strings.Contains(out, `"text":"Counted."`) {
		t.Fatalf("opencode run did not end with the model's answer:\n%s", out)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2\n%s", len(reqs), out)
	}
	first, err := reqs[0].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(first.ToolNames(), tool) {
		t.Errorf("OpenCode did not offer %s: %v", tool, first.ToolNames())
	}
	// The server's instructions, gemkit's summary, are in OpenCode's
	// system prompt.
	if sys, _ := first.Messages[0]["content"].(string); first.Messages[0]["role"] != "system" || !strings.Contains(sys, "`demo_count(") {
		t.Errorf("the summary is not in OpenCode's system prompt: %.3000s", sys)
	}
	second, err := reqs[1].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if res := second.ToolResults(); len(res) != 1 || !strings.Contains(res[0], `{"word":"hi","times":2,"files":"a.txt"}`) {
		t.Errorf("the tool's output (run in the project's folder) did not reach the model: %q", res)
	}
}

// openCodeSetUp is the JSON block under docs/mcp.md's "### OpenCode", as
// a person copies it into opencode.json.
func openCodeSetUp(t *testing.T) map[string]any {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(gemkittest.RepoRoot(t), "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### OpenCode\n")
	_, block, ok2 := strings.Cut(section, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/mcp.md has no ```json block under \"### OpenCode\"")
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		t.Fatalf("docs/mcp.md's OpenCode block is not JSON: %v\n%s", err, block)
	}
	if _, ok := cfg["mcp"].(map[string]any)["gemkit"].(map[string]any); !ok {
		t.Fatalf("docs/mcp.md's OpenCode block has no mcp.gemkit: %s", block)
	}
	return cfg
}

// openAICompatible is an OpenCode provider of one model on a scripted
// Chat Completions server at url.
func openAICompatible(url, model string) map[string]any {
	return map[string]any{"npm": "@ai-sdk/openai-compatible", "name": model,
		"options": map[string]any{"baseURL": url + "/v1", "apiKey": "x"},
		"models":  map[string]any{model: map[string]any{"name": model}}}
}

// runOpenCode runs the real OpenCode (`opencode run prompt`) in f's
// workspace, with `gemkit mcp` set up by docs/mcp.md's OpenCode block as
// written, against model, and returns what it printed; the test fails if
// it fails. The session's title goes to a second scripted model, the
// configured small model, so that it takes no turn of model's script.
func runOpenCode(t *testing.T, f *fixture, opencode string, model *fakemodel.OpenAIServer, prompt string) string {
	t.Helper()
	titles, err := fakemodel.StartOpenAI(fakemodel.Text("Word count"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { titles.Close() })

	// The documented config, with the built gemkit for "gemkit" and the
	// scripted models added.
	cfg := openCodeSetUp(t)
	gk := cfg["mcp"].(map[string]any)["gemkit"].(map[string]any)
	argv, _ := gk["command"].([]any)
	if len(argv) == 0 || argv[0] != "gemkit" {
		t.Fatalf("docs/mcp.md's OpenCode block does not start gemkit: %v", gk)
	}
	argv[0] = f.bin
	maps.Copy(cfg, map[string]any{
		"model":       "scripted/m",
		"small_model": "titles/t",
		"provider": map[string]any{
			"scripted": openAICompatible(model.URL, "m"),
			"titles":   openAICompatible(titles.URL, "t"),
		},
	})
	config := filepath.Join(f.home, ".config")
	b, _ := json.Marshal(cfg)
	writeFile(t, filepath.Join(config, "opencode", "opencode.json"), string(b), 0o644)

	cmd := exec.Command(opencode, "run", "--pure", "--format", "json", prompt)
	cmd.Dir = f.ws
	// OpenCode installs plugins from npm at every start: a closed port for
	// the registry keeps it offline, as do the variables that turn off its
	// update check, its model list download and its default plugins. It
	// takes the project's folder from PWD, which a shell keeps and
	// exec.Cmd does not set when given an environment.
	cmd.Env = append(f.env(), "PWD="+f.ws, "XDG_CONFIG_HOME="+config,
		"XDG_DATA_HOME="+filepath.Join(f.home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(f.home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(f.home, ".local", "state"),
		"npm_config_registry=http://127.0.0.1:9/",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("opencode run: %v\n%s", err, out)
	}
	return string(out)
}
