package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// responsesAPI is a scripted OpenAI Responses API (POST /v1/responses,
// streamed), as Codex CLI calls it.
type responsesAPI struct {
	url    string
	script func(body map[string]any) []map[string]any // the output items of the next response

	mu   sync.Mutex
	reqs []map[string]any
	n    int
}

func startResponsesAPI(t *testing.T, script func(map[string]any) []map[string]any) *responsesAPI {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &responsesAPI{url: "http://" + ln.Addr().String(), script: script}
	srv := &http.Server{Handler: a}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *responsesAPI) requests() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.reqs...)
}

func (a *responsesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, body)
	a.n++
	id := fmt.Sprintf("resp_%d", a.n)
	a.mu.Unlock()
	items := a.script(body)
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	for i, it := range items {
		ev(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 20}}})
}

// TestCodex runs the real Codex CLI 0.169.0 (`codex exec`) with `gemkit
// mcp` as its MCP server against a scripted Responses API. Codex offers
// the server's tools in a namespace mcp__gemkit, with the server's
// instructions as its description, and turns - into _ in their names:
// the model calls word-tools_echo-word as word_tools_echo_word, and the
// tool's output comes back to it.
func TestCodex(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.link(t, "word-tools", `{"name": "word-tools", "version": "1.0.0", "description": "Words.",
	 "tools": [{"name": "echo-word", "description": "Echoes a word.", "executable": "tools/echo.sh", "runtime": "shell",
	   "args": [{"name": "word", "type": "string"}]}]}`,
		map[string]string{"tools/echo.sh": "echo \"echo-marker-5521 $2\"\n"})
	api := codexCallOnce(t, "word_tools_echo_word", `{"word":"hi"}`, "Echoed.")
	out := runCodex(t, f, api, "Echo hi with the word tool.")
	if !strings.Contains(out, "Echoed.") {
		t.Fatalf("codex exec did not end with the model's answer:\n%s", out)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2\n%s", len(reqs), out)
	}
	var ns struct {
		Description string
		Tools       []struct{ Name string }
	}
	for _, tl := range reqs[0]["tools"].([]any) {
		if m := tl.(map[string]any); m["type"] == "namespace" && m["name"] == "mcp__gemkit" {
			b, _ := json.Marshal(m)
			json.Unmarshal(b, &ns)
		}
	}
	found := false
	for _, tl := range ns.Tools {
		found = found || tl.Name == "word_tools_echo_word"
	}
	if !found || !strings.Contains(ns.Description, "`word-tools_echo-word(word: string)`") || !strings.Contains(ns.Description, "turn - into _") {
		t.Errorf("Codex's mcp__gemkit namespace: %+v", ns)
	}
	in, _ := json.Marshal(reqs[1]["input"])
	if !strings.Contains(string(in), "echo-marker-5521 hi") {
		t.Errorf("the tool's output did not reach the model: %s", in)
	}
}

// runCodex runs the real Codex CLI (`codex exec prompt`) in f's
// workspace with `gemkit mcp` as its MCP server, required, as
// docs/mcp.md says (Codex leaves out the tools of a server it does not
// require that takes over a second to list them), against api, and
// returns what it printed; the test fails if it fails.
func runCodex(t *testing.T, f *fixture, api *responsesAPI, prompt string) string {
	t.Helper()
	return runCodexRequired(t, f, api, prompt, true)
}

// runCodexRequired is runCodex with gemkit mcp required or not.
func runCodexRequired(t *testing.T, f *fixture, api *responsesAPI, prompt string, required bool) string {
	t.Helper()
	_, interop := gemkittest.Interop(t, "@openai/codex-linux-x64/package.json")
	codex := filepath.Join(interop, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	chome := filepath.Join(f.root, "codex")
	if err := os.MkdirAll(chome, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`model = "gpt-5"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.gemkit]
command = %q
args = ["mcp", "--workspace", %q]
env = { HOME = %q }
required = %t
`, api.url, f.bin, f.ws, f.home, required)
	if err := os.WriteFile(filepath.Join(chome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(codex, "exec", "--skip-git-repo-check", prompt)
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), "CODEX_HOME="+chome, "SCRIPTED_API_KEY=x")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	return string(out)
}

// codexCallOnce starts a scripted Responses API whose model calls the
// tool name of gemkit's namespace with args (JSON) and, once the tool's
// output is in, answers text. The shapes are what Codex 0.169 sends and
// reads: a function_call item naming the namespace and the tool,
// answered by a function_call_output in the next request's input.
func codexCallOnce(t *testing.T, name, args, text string) *responsesAPI {
	t.Helper()
	return startResponsesAPI(t, func(body map[string]any) []map[string]any {
		in, _ := json.Marshal(body["input"])
		if !strings.Contains(string(in), `"function_call_output"`) {
			return []map[string]any{{"type": "function_call", "id": "fc_1", "call_id": "call_1",
				"namespace": "mcp__gemkit", "name": name, "arguments": args}}
		}
		return []map[string]any{{"type": "message", "role": "assistant", "id": "msg_1",
			"content": []any{map[string]any{"type": "output_text", "text": text}}}}
	})
}
