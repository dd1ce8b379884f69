package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestGeminiCLI runs the real Gemini CLI (the pinned @google/gemini-cli,
// offline, against the scripted model server) with `gemkit mcp` in its
// settings, over stdio and over Streamable HTTP (httpUrl with the bearer
// token in headers). The scripted model calls an extension tool and
// read_doc for a doc and for an agent skill; the test asserts what the
// CLI sent the model next: the summary (the server's instructions, with
// the skill listed) in the first request, then the tool's real output,
// then the doc's text, then the skill's instructions.
func TestGeminiCLI(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { testGeminiCLI(t, transport) })
	}
}

func testGeminiCLI(t *testing.T, transport string) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := newFixture(t)
	server := map[string]any{"command": f.bin, "args": []string{"mcp"}}
	if transport == "http" {
		url, token := startHTTP(t, f)
		server = map[string]any{"httpUrl": url, "headers": map[string]string{"Authorization": "Bearer " + token}}
	}

	model, err := fakemodel.Start(
		fakemodel.Call("mcp_gemkit_demo_count", map[string]any{"word": "hello", "times": 3}),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "skill:triage"}),
		fakemodel.Text("All done."),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	settings := map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"general":    map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"mcpServers": map[string]any{"gemkit": server},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), string(b), 0o600)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli := filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	cmd := exec.CommandContext(ctx, node, cli, "-p", "Say hello three times, then read the demo guide.", "--yolo")
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), "GOOGLE_GEMINI_BASE_URL="+model.URL, "GEMINI_API_KEY=test-key", "NO_COLOR=1", "CI=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	report := func() string {
		var b strings.Builder
		for _, r := range model.Requests() {
			b.WriteString(r.Method + " " + r.Path + "\n")
		}
		return "requests:\n" + b.String() + "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
	}
	if runErr != nil {
		t.Fatalf("gemini: %v\n%s", runErr, report())
	}

	turns := model.Turns()
	if len(turns) != 4 {
		t.Fatalf("%d model turns, want 4\n%s", len(turns), report())
	}
	first, err := turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(first.FunctionNames(), " ")
	for _, want := range []string{"mcp_gemkit_demo_count", "mcp_gemkit_read_doc"} {
		if !strings.Contains(" "+names+" ", " "+want+" ") {
			t.Fatalf("the CLI did not offer %s; it offered: %s", want, names)
		}
	}
	for _, want := range []string{"You have the following extensions available.", "`demo_count(word: string, times: integer)`: Repeats a word.", "`guide`: How the demo tools work.",
		"  - **Skills**:\n    - `triage`: Sort incoming bug reports by severity.\n", disclosure.SkillsHeader} {
		if !strings.Contains(first.Text(), want) {
			t.Errorf("the first request does not carry the summary line %q", want)
		}
	}

	// Gemini CLI lists the same skill itself, from the extension it loads
	// from the same extensions folder (docs/mcp.md says so).
	if !strings.Contains(first.Text(), "<name>triage</name>") {
		t.Errorf("Gemini CLI no longer lists the extension's skill in its own prompt; docs/mcp.md says it does")
	}

	second, _ := turns[1].Generate()
	if !responseContains(second, "mcp_gemkit_demo_count", `{"word":"hello","times":3,"files":"a.txt"}`) {
		t.Errorf("the second request does not carry the tool's output: %+v", second.FunctionResponses())
	}
	third, _ := turns[2].Generate()
	if !responseContains(third, "mcp_gemkit_read_doc", "The count tool repeats a word.") {
		t.Errorf("the third request does not carry the doc: %+v", third.FunctionResponses())
	}
	fourth, _ := turns[3].Generate()
	if !responseContains(fourth, "mcp_gemkit_read_doc", "Label each report P0 to P3") {
		t.Errorf("the fourth request does not carry the skill's instructions: %+v", fourth.FunctionResponses())
	}
	if !strings.Contains(stdout.String(), "All done.") {
		t.Errorf("the CLI did not print the final answer:\n%s", report())
	}
}

// responseContains reports whether g has a function response named name
// whose JSON holds text.
func responseContains(g fakemodel.GenerateRequest, name, text string) bool {
	for _, r := range g.FunctionResponses() {
		b, _ := json.Marshal(r.Response)
		var s string
		// The text sits inside JSON strings: compare with it decoded.
		if r.Name == name && (strings.Contains(string(b), text) || strings.Contains(unquoteAll(b, &s), text)) {
			return true
		}
	}
	return false
}

// unquoteAll is the response with one level of JSON string escaping
// removed, so a tool's JSON output matches as it was printed.
func unquoteAll(b []byte, s *string) string {
	*s = strings.NewReplacer(`\"`, `"`, `\n`, "\n", `\\`, `\`).Replace(string(b))
	return *s
}
