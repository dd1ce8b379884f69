package exthook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: a hook's sandbox policy, in an environment whose
// folders are all known (sandboxtest.Places), is what the golden file
// says: the closed folders, the runtime folders and the companions it
// may not reach stay what they were when each kind of sandboxed process
// built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	ws, dir := filepath.Join(p.Root, "ws"), filepath.Join(p.Root, "ext")
	for _, d := range []string{ws, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []permission.Access{permission.AccessNone, permission.AccessWorkspace} {
		h := &Hook{Extension: "x", Dir: dir, Hook: extension.CommandHook{Command: "bash ./hook.sh"}, Workspace: ws,
			Environ: p.Environ, Widening: extension.Widening{Write: w, Hosts: []string{"example.com"}}}
		pol, err := h.Policy(filepath.Join(p.Root, "hook-tmp"))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "profile-write-"+string(w)+".golden"), []byte(p.Text(pol)+p.Own(pol.OwnServer)))
	}
}
