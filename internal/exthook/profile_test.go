package exthook

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: a hook's policy, with no write and with the
// workspace's, is what its golden file says (sandboxtest.Places), as it
// was when each kind of sandboxed process built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	ws, dir := p.Folder(t, "ws"), p.Folder(t, "ext")
	for _, w := range []permission.Access{permission.AccessNone, permission.AccessWorkspace} {
		h := &Hook{Extension: "x", Dir: dir, Hook: extension.CommandHook{Command: "bash ./hook.sh"}, Workspace: ws,
			Environ: p.Environ, Widening: extension.Widening{Write: w, Hosts: []string{"example.com"}}}
		pol, err := h.Policy(filepath.Join(p.Root, "hook-tmp"))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "profile-write-"+string(w)+".golden"), p.Golden(pol, pol.OwnServer))
	}
}
