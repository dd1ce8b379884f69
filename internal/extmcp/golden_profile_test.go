package extmcp

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProfileGolden: an extension's stdio server's profile, widened to
// write the workspace and reach a host, is its golden file's
// (sandboxtest.Places): building every kind's profile from shared parts
// changed none of it.
func TestProfileGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	root, err := DataRoot(map[string]string{"HOME": p.Getenv("HOME")})
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Extension: "x", Server: "s", Dir: p.Folder(t, "ext"), Command: "bash", Args: []string{"server.sh"},
		Widening: extension.Widening{Write: permission.AccessWorkspace, Hosts: []string{"example.com"}}}
	pr, err := BuildProfile(sp, p.Folder(t, "ws"), root, p.Environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "profile.golden"), p.Golden(pr, pr.OwnServer))
}
