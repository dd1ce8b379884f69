package langserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// TestMissingModuleGopls: a workspace whose go.mod (go 1.17 or later)
// requires a module the module cache lacks. gopls loads the rest and
// reports the import; the answer adds that gopls runs without network in
// gemkit's sandbox, and to run `go mod download`.
//
// The words gopls v0.23.0 gives, from the run made for this test
// (2026-11-27, a file importing github.com/fatih/camelcase: a made-up
// v1.0.9 with the machine's module cache, with and without its go.sum
// lines; v1.0.0 with GOMODCACHE an empty folder; and go.mod not requiring
// it at all), were the same each time:
//
//	could not import github.com/fatih/camelcase (no required module provides package "github.com/fatih/camelcase") (compiler BrokenImport)
//
// so the module missing is told from go.mod and the cache, not the words:
// with the module not required, the answer adds nothing.
func TestMissingModuleGopls(t *testing.T) {
	codeinteltest.Gopls(t)
	const imp = "package main\n\nimport \"example.com/absent/wrap\"\n\nfunc Wrapped() string { return wrap.It() }\n"
	for _, c := range []struct {
		name, mod, sum string
		fix            bool
	}{
		{"required", "require example.com/absent v1.0.0\n",
			"example.com/absent v1.0.0 h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nexample.com/absent v1.0.0/go.mod h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n", true},
		{"not required", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := codeinteltest.Fixture(t, "go")
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("go.mod", "module example.com/shop\n\ngo 1.22\n\n"+c.mod)
			write("go.sum", c.sum)
			write("wrapped.go", imp)
			cache := t.TempDir() // a module cache without example.com/absent
			tl, _ := poolTools(t, Options{Workspace: ws, Env: append(os.Environ(), "GOMODCACHE="+cache)})
			const words = `wrapped.go:3:8: error: could not import example.com/absent/wrap (no required module provides package "example.com/absent/wrap")`
			fix := "[gemkit runs gopls in its sandbox without network, so it cannot download example.com/absent@v1.0.0, which the module cache it reads (" + cache +
				") lacks: run `go mod download` in " + ws + " yourself, or let gopls download by naming proxy.golang.org and sum.golang.org in its allowedHosts (docs/code-intel.md)]"
			for _, args := range []string{`{"file":"wrapped.go"}`, `{}`} {
				got := ask(t, tl, codeintel.ToolDiagnostics, args, "1 problem in", words)
				if strings.Contains(got, fix) != c.fix {
					t.Fatalf("code_diagnostics %s: want the fix %v, got:\n%s", args, c.fix, got)
				}
			}
		})
	}
}
