package langserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: a language server's profile, in an environment
// whose folders are all known (sandboxtest.Places), is what the golden
// file says: the closed folders, what it reads and writes, its
// environment and the companions it may not reach stay what they were
// when each kind of sandboxed process built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	gopls := filepath.Join(p.Root, "opt", "bin", "gopls")
	if err := os.WriteFile(gopls, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(p.Root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pr, err := buildProfile(Builtin()[0], gopls, ws, filepath.Join(p.Root, "cache"), append(p.Environ, "GITHUB_TOKEN=secret", "LANG=C.UTF-8"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), []byte(p.Text(pr.sp)+p.Own(pr.sp.OwnServer)))
}
