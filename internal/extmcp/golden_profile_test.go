package extmcp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: an extension's MCP server's profile, in an
// environment whose folders are all known (sandboxtest.Places), is what
// the golden file says: the closed folders, what it reads and writes,
// its environment and the companions it may not reach stay what they
// were when each kind of sandboxed process built its profile apart.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	ws, dir := filepath.Join(p.Root, "ws"), filepath.Join(p.Root, "ext")
	for _, d := range []string{ws, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := DataRoot(map[string]string{"HOME": p.Getenv("HOME")})
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Extension: "x", Server: "s", Dir: dir, Command: "bash", Args: []string{"server.sh"},
		Widening: extension.Widening{Write: permission.AccessWorkspace, Hosts: []string{"example.com"}}}
	pr, err := BuildProfile(sp, ws, root, p.Environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), []byte(p.Text(pr)+p.Own(pr.OwnServer)))
}
