package toolrun

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: a tool's resolved policy, in an environment whose
// folders are all known (sandboxtest.Places), is what the golden file
// says: the closed folders and the companions it may not reach stay what
// they were when each kind of sandboxed process built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	r := &Runner{Protected: []string{filepath.Join(p.Root, "protected")}}
	ws, ext := filepath.Join(p.Root, "ws"), filepath.Join(p.Root, "ext")
	env := envmap.Of(p.Environ)
	pol := r.resolve(permission.Policy{Read: permission.AccessWorkspace, Write: permission.AccessWorkspace, AllowedHosts: []string{"example.com"}},
		env, ws, env["HOME"], ext, nil)
	golden.Check(t, filepath.Join("testdata", "profile.golden"), []byte(p.Text(pol)+p.Own(pol.OwnServer)))
}
