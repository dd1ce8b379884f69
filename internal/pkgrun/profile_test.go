package pkgrun

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: npm's proxy refuses the companions the golden file
// names (sandboxtest.Places): those every other profile refuses.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	in := &Installer{Environ: p.Environ}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), p.Golden(struct{}{}, in.ownServer()))
}
