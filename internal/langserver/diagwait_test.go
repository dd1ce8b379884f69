package langserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// A module with a file its build constraints leave out on this platform
// (spf13/cobra's command_win.go): gopls never reports on it, and the
// workspace's diagnostics do not wait for it.
func TestPoolWorkspaceDiagnosticsPlatformFile(t *testing.T) {
	codeinteltest.Gopls(t)
	// The files are there before the servers start, as in a clone: a
	// file the watcher sees written is one gopls hears of, and answers
	// for.
	ws := codeinteltest.Fixture(t, "go")
	os.WriteFile(filepath.Join(ws, "greet", "greet_windows.go"), []byte("//go:build windows\n\npackage greet\n\n// Console is the Windows console's name.\nconst Console = \"conhost\"\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "store", "store_win.go"), []byte("//go:build windows\n\npackage store\n\nvar windowsOnly = 1\n"), 0o644)
	main := filepath.Join(ws, "main.go")
	text, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(text), "greet.Greet(", "greet.Gret(", 1)), 0o644)
	tl, _ := poolTools(t, Options{Workspace: ws, Watch: true})
	for i := range 3 {
		start := time.Now()
		ask(t, tl, codeintel.ToolDiagnostics, `{}`, "1 problem in the workspace: 1 error", "main.go:15:20: error: undefined: greet.Gret")
		took := time.Since(start)
		t.Logf("workspace diagnostics %d took %v", i, took)
		// Well under the wait: a loaded machine's gopls takes seconds.
		if i > 0 && took > diagWait*2/3 {
			t.Fatalf("warm workspace diagnostics took %v (the wait for a file's diagnostics is %v)", took, diagWait)
		}
	}
	// Asked about (then open in gopls), the file left out is answered at
	// once.
	start := time.Now()
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"greet/greet_windows.go"}`, "No problems reported in greet/greet_windows.go.")
	if took := time.Since(start); took > diagWait*2/3 {
		t.Fatalf("diagnostics of the file left out took %v", took)
	}
}

// Diagnostics of a file after another file changed on disk are those of
// the change at the first ask: typescript-language-server, with the
// changed file not open in it, then open, each way (an error brought,
// then taken away).
func TestPoolTypeScriptDiagnosticsAfterChange(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	tl, p, ws := tools(t, "ts", codeinteltest.PathWith(bin))
	warm(t, tl, codeintel.ToolDefinition, `{"symbol":"greet","file":"src/main.ts"}`, "src/greet.ts:14:17")
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`, "No problems reported in src/main.ts.")
	g := filepath.Join(ws, "src", "greet.ts")
	old, _ := os.ReadFile(g)
	broken := strings.Replace(string(old), "export function greet(name: string): string {", "export function greet(name: string, lang: string): string {", 1)
	for _, round := range []string{"greet.ts not open", "greet.ts open"} {
		t.Log(round)
		if round == "greet.ts open" {
			ask(t, tl, codeintel.ToolHover, `{"symbol":"greet","file":"src/greet.ts"}`, "greet(name: string): string")
		}
		if s := p.Servers(); len(s) != 1 || s[0].OpenDocs != map[bool]int{false: 1, true: 2}[round == "greet.ts open"] {
			t.Fatalf("%s: servers %+v", round, s)
		}
		os.WriteFile(g, []byte(broken), 0o644)
		ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`, "1 problem in src/main.ts: 1 error", "Expected 2 arguments, but got 1.")
		os.WriteFile(g, old, 0o644)
		got := ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`)
		if !strings.HasPrefix(got, "No problems reported in src/main.ts.") {
			t.Fatalf("%s: after greet.ts was restored:\n%s", round, got)
		}
	}
}
