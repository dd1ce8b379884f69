package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/fakemodel"
)

// TestCodeIntelRun: gemkit run offers the code-intelligence tools; the
// model finds a definition by name from a call site, then changes the
// function's signature, and the accepted edit's result names the error
// that brought into the caller (from gopls, through the workspace's
// broker, which goes with the run).
func TestCodeIntelRun(t *testing.T) {
	codeinteltest.Gopls(t)
	f := newFixture(t)
	codeinteltest.Copy(t, "go", f.ws)
	t.Cleanup(func() { codeinteltest.WaitGone(t, f.ws, "gopls") })
	srv := startGemini(t,
		fakemodel.Call("code_definition", map[string]any{"symbol": "Greet", "file": "main.go"}),
		fakemodel.Call("propose_edit", map[string]any{"path": "greet/greet.go",
			"search": "func Greet(name string) string {", "replace": "func Greet(name, lang string) string {"}),
		fakemodel.Text("Done."),
	)
	f.gemini(srv)
	tr, code, stderr := f.run(t, "--yes", "Give Greet a language.")
	if code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d, %+v\n%s", code, tr, stderr)
	}
	first := geminiTurn(t, srv, 0)
	if names := " " + strings.Join(first.FunctionNames(), " ") + " "; !strings.Contains(names, " code_definition ") || !strings.Contains(names, " code_diagnostics ") {
		t.Errorf("the code tools are not offered: %s", names)
	}
	second := geminiTurn(t, srv, 1)
	if !strings.Contains(responses(second), "Greet (used at main.go:15:20) is defined at:\\ngreet/greet.go:16:6: func Greet(name string) string {") {
		t.Errorf("the definition did not reach the model: %s", responses(second))
	}
	third := geminiTurn(t, srv, 2)
	if r := responses(third); !strings.Contains(r, "it was written.") ||
		!strings.Contains(r, "gopls reports 1 new problem after this edit of greet/greet.go:\\nmain.go:15:33: error: not enough arguments in call to greet.Greet") {
		t.Errorf("the edit's result lacks its new problem: %s", r)
	}
	b, _ := os.ReadFile(filepath.Join(f.ws, "greet", "greet.go"))
	if !strings.Contains(string(b), "func Greet(name, lang string) string {") {
		t.Errorf("the edit was not written")
	}
	// code_definition started gopls: the edit's check waited for no start.
	if strings.Contains(stderr, "(starting it)") {
		t.Errorf("gopls was running, yet stderr says it starts:\n%s", stderr)
	}
}

// TestCodeIntelStartShown: an edit accepted before any code tool ran
// waits for gopls's first start, and stderr says so in one line (not a
// terminal) between the edit's line and the tool's, while the model
// hears nothing of it.
func TestCodeIntelStartShown(t *testing.T) {
	codeinteltest.Gopls(t)
	f := newFixture(t)
	codeinteltest.Copy(t, "go", f.ws)
	t.Cleanup(func() { codeinteltest.WaitGone(t, f.ws, "gopls") })
	srv := startGemini(t,
		fakemodel.Call("propose_edit", map[string]any{"path": "greet/greet.go",
			"search": "func Greet(name string) string {", "replace": "func Greet(name, lang string) string {"}),
		fakemodel.Text("Done."),
	)
	f.gemini(srv)
	_, code, stderr := f.runText(t, "--yes", "Give Greet a language.")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	const line = "  ✎ checking greet/greet.go with gopls (starting it)…\n"
	edit, tool := strings.Index(stderr, "  ✎ greet/greet.go: accepted"), strings.Index(stderr, "  ⚙ propose_edit → ok")
	if at := strings.Index(stderr, line); strings.Count(stderr, line) != 1 || edit < 0 || !(edit < at && at < tool) {
		t.Errorf("stderr lacks the one line between the edit's and the tool's:\n%s", stderr)
	}
	if r := responses(geminiTurn(t, srv, 1)); strings.Contains(r, "starting it") || !strings.Contains(r, "not enough arguments in call to greet.Greet") {
		t.Errorf("the edit's result: %s", r)
	}
}

// responses is the JSON of a request's function responses.
func responses(g fakemodel.GenerateRequest) string {
	b, _ := json.Marshal(g.FunctionResponses())
	return string(b)
}
