package pkgrun

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: the companions npm's sandbox may not reach, in an
// environment whose folders are all known (sandboxtest.Places), are what
// the golden file says: they stay what they were when each kind of
// sandboxed process built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	in := &Installer{Environ: p.Environ}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), []byte(p.Own(in.ownServer())))
}
