package toolrun

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: a tool's resolved policy (its closed folders, the
// companions its proxy refuses) is its golden file's, in the environment
// sandboxtest.Places makes.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	r := &Runner{Protected: []string{filepath.Join(p.Root, "protected")}}
	ws, ext := filepath.Join(p.Root, "ws"), filepath.Join(p.Root, "ext")
	env := envmap.Of(p.Environ)
	pol := r.resolve(permission.Policy{Read: permission.AccessWorkspace, Write: permission.AccessWorkspace, AllowedHosts: []string{"example.com"}},
		env, ws, env["HOME"], ext, nil)
	golden.Check(t, filepath.Join("testdata", "profile.golden"), p.Golden(pol, pol.OwnServer))
}
