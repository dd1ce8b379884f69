//go:build unix

package pkgrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateFolderOfTrees: an extension's folder of trees is checked as
// every private folder of gemkit's is (sandbox.PrivateDir), not for
// links alone: one that others may enter, or another user's, is refused,
// and so is a link anywhere on the way from the home folder (a tool
// allowed to write the home folder could plant ~/.local/share), not
// only below ~/.local/share/gemkit.
func TestPrivateFolderOfTrees(t *testing.T) {
	cases := map[string]struct {
		prepare func(t *testing.T, home, root string)
		want    string
	}{
		"others may enter it": {func(t *testing.T, home, root string) {
			mkdir(t, filepath.Join(root, "ext"), 0o755)
		}, "only it may enter"},
		"a link on the way from home": {func(t *testing.T, home, root string) {
			elsewhere := t.TempDir()
			mkdir(t, filepath.Join(home, ".local"), 0o755)
			if err := os.Symlink(elsewhere, filepath.Join(home, ".local", "share")); err != nil {
				t.Fatal(err)
			}
		}, "is not a folder of its own (a symlink?); remove it and try again"},
	}
	if os.Getuid() == 0 {
		cases["another user's"] = struct {
			prepare func(t *testing.T, home, root string)
			want    string
		}{func(t *testing.T, home, root string) {
			mkdir(t, filepath.Join(root, "ext"), 0o700)
			if err := os.Chown(filepath.Join(root, "ext"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "a folder of this user's"}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			root := Root(home)
			c.prepare(t, home, root)
			unlock, err := Lock(root, "ext")
			if err == nil {
				unlock()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Lock: %v, want %q", err, c.want)
			}
		})
	}
	// A new folder passes.
	unlock, err := Lock(Root(t.TempDir()), "ext")
	if err != nil {
		t.Fatalf("a new folder: %v", err)
	}
	unlock()
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
