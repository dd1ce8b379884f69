package langserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// TestLoadErrorGopls: a workspace whose go.mod needs a module the module
// cache lacks, with no network (the profile's GOPROXY=off), as a copy of
// spf13/cobra whose dependencies were never downloaded is: its go
// directive (before 1.17: the whole module graph is loaded) makes the go
// command fail, and gopls loads nothing and finds no name. The answer
// says why, and what to do, rather than that the name is not declared.
func TestLoadErrorGopls(t *testing.T) {
	codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	mod := filepath.Join(ws, "go.mod")
	if err := os.WriteFile(mod, []byte("module example.com/shop\n\ngo 1.15\n\nrequire example.com/absent v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// go.sum as the project has it: without it, gopls reports that go.sum
	// is out of sync instead.
	sum := "example.com/absent v1.0.0 h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nexample.com/absent v1.0.0/go.mod h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
	if err := os.WriteFile(filepath.Join(ws, "go.sum"), []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir() // a module cache without example.com/absent
	tl, p := poolTools(t, Options{Workspace: ws, Env: append(os.Environ(), "GOMODCACHE="+cache)})
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Store.Total"}`,
		"no declaration named Store.Total found: gopls could not load the workspace: go: example.com/absent@v1.0.0: module lookup disabled by GOPROXY=off",
		"; run `go mod download` in "+ws+" (gemkit's servers have no network: gopls reads the modules in "+cache+")")
	// `gemkit codeintel status` says it too.
	if s := p.Servers(); len(s) != 1 || !strings.Contains(s[0].LoadError, "module lookup disabled by GOPROXY=off; run `go mod download` in "+ws) {
		t.Fatalf("servers: %+v", s)
	}
}
