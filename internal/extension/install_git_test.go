package extension

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestInstallErrorsNameTheFix: the two ways an install from a repository
// of one's own goes wrong (as an extension's author publishing to a bare
// repository on disk does) are recognised, and the error names the fix:
//   - the bare repository given as a path, which would be copied as a
//     folder and then have "no gemini-extension.json", names its file://
//     URL;
//   - its file:// URL while its HEAD names a branch with no commits (git
//     init --bare makes master; the author pushed main), which git clones
//     as an empty repository with only a warning, names --ref and the
//     branches it has, not --path.
func TestInstallErrorsNameTheFix(t *testing.T) {
	work, _ := gitRepo(t, map[string]string{ManifestFile: manifestJSON("pub", "1.0.0", ""), "GEMINI.md": "hi"})
	gemkittest.Git(t, work, "branch", "-M", "main")
	bare := filepath.Join(t.TempDir(), "pub.git")
	gemkittest.Git(t, filepath.Dir(bare), "init", "--quiet", "--bare", "--initial-branch=master", bare)
	gemkittest.Git(t, work, "push", "--quiet", bare, "main")
	s := newStore(t)
	ctx := context.Background()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, bare)
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, source, ref string
		want              []string
	}{
		{"bare repository as a path", bare, "", []string{bare + " is a git repository without a working tree (bare)", "gemkit extensions install file://" + bare}},
		{"the same by a relative path", rel, "", []string{"gemkit extensions install file://" + bare}},
		{"HEAD names a branch with no commits", "file://" + bare, "", []string{"its HEAD names the branch master, which has no commits; it has the branch main: install that with --ref main"}},
	} {
		_, err := s.Install(ctx, InstallRequest{Source: c.source, Ref: c.ref, Consent: yes})
		if err == nil {
			t.Fatalf("%s: installed", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), ManifestFile) || strings.Contains(err.Error(), "sub-folder") {
			t.Errorf("%s: %v; the error still speaks of the manifest or a sub-folder", c.name, err)
		}
	}

	// A second branch: both named. Then the fix itself works.
	gemkittest.Git(t, work, "push", "--quiet", bare, "main:dev")
	if _, err := s.Install(ctx, InstallRequest{Source: "file://" + bare, Consent: yes}); err == nil || !strings.Contains(err.Error(), "it has the branches dev, main: install one with --ref") {
		t.Errorf("two branches: %v", err)
	}
	in, err := s.Install(ctx, InstallRequest{Source: "file://" + bare, Ref: "main", Consent: yes})
	if err != nil || in.Manifest().Name != "pub" {
		t.Fatalf("install with --ref main: %v", err)
	}
}
