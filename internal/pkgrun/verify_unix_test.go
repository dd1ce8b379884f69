//go:build unix

package pkgrun

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerify: a pinned tree is the one pinned only while its lock is,
// byte for byte, names the package with the integrity pinned, and no
// folder on the way to it (the tree's own, the extension's) was swapped
// for a link, even to a copy of the same files.
func TestVerify(t *testing.T) {
	lock := `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/p": {"version": "1.0.0", "integrity": "sha512-p"}}}`
	sum := sha256.Sum256([]byte(lock))
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, root, tree string, p *Pinned)
		want string // in the error; "" for none
	}{
		{"as pinned", func(*testing.T, string, string, *Pinned) {}, ""},
		{"the lock changed", func(t *testing.T, _, tree string, _ *Pinned) {
			write(t, filepath.Join(tree, lockName), strings.Replace(lock, "sha512-p", "sha512-q", 1))
		}, "is not the one pinned"},
		{"another integrity pinned", func(_ *testing.T, _, _ string, p *Pinned) { p.Integrity = "sha512-other" }, "gives p the integrity sha512-p, not sha512-other"},
		{"the tree swapped for a link to a copy", func(t *testing.T, _, tree string, _ *Pinned) {
			copyTo := tree + "-copy"
			os.Rename(tree, copyTo)
			os.Symlink(copyTo, tree)
		}, "is a link, not the folder"},
		{"the extension's folder swapped for a link to a copy", func(t *testing.T, root, _ string, _ *Pinned) {
			ext := filepath.Join(root, "ext")
			os.Rename(ext, ext+"-copy")
			os.Symlink(ext+"-copy", ext)
		}, "is a link, not the folder"},
		{"a tree elsewhere", func(t *testing.T, root, _ string, p *Pinned) { p.Tree = filepath.Join(root, "other", "s@1") }, "is not in"},
		{"gone", func(t *testing.T, _, tree string, _ *Pinned) { os.RemoveAll(tree) }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "packages")
			tree := filepath.Join(root, "ext", "s@1.0.0-1")
			write(t, filepath.Join(tree, lockName), lock)
			p := Pinned{Tree: tree, Package: "p", Integrity: "sha512-p", Lock: hex.EncodeToString(sum[:])}
			tc.edit(t, root, tree, &p)
			err := Verify(root, "ext", p)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Verify = %v, want %q", err, tc.want)
			}
		})
	}
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
