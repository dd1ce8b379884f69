package langserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: gopls's profile, from an environment with a token
// in it, is what the golden file holds (sandboxtest.Places): its reads,
// cache, environment and closed folders did not move when the profiles'
// parts found one home each.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	gopls := filepath.Join(p.Root, "opt", "bin", "gopls")
	if err := os.WriteFile(gopls, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	pr, err := buildProfile(Builtin()[0], gopls, p.Folder(t, "ws"), filepath.Join(p.Root, "cache"), append(p.Environ, "GITHUB_TOKEN=secret", "LANG=C.UTF-8"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), p.Golden(pr.sp, pr.sp.OwnServer))
}
