package treewatch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestChanged: every way of changing a watched tree is seen, and a
// tree left alone (read, even) is not.
func TestChanged(t *testing.T) {
	mk := func(t *testing.T) (string, *Watch) {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("b"), 0o644))
		must(t, os.Symlink("a", filepath.Join(dir, "l")))
		w, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return dir, w
	}
	dir, w := mk(t)
	if _, err := os.ReadFile(filepath.Join(dir, "sub", "b")); err != nil {
		t.Fatal(err)
	}
	if w.Changed() {
		t.Fatal("a tree only read is said to have changed")
	}
	outside := t.TempDir()
	for name, change := range map[string]func(dir string) error{
		"a file written":      func(d string) error { return os.WriteFile(filepath.Join(d, "sub", "b"), []byte("x"), 0o644) },
		"a file made":         func(d string) error { return os.WriteFile(filepath.Join(d, "sub", "c"), nil, 0o644) },
		"a file removed":      func(d string) error { return os.Remove(filepath.Join(d, "a")) },
		"a file renamed over": func(d string) error { return os.Rename(filepath.Join(d, "sub", "b"), filepath.Join(d, "a")) },
		"a mode changed":      func(d string) error { return os.Chmod(filepath.Join(d, "a"), 0o755) },
		"a link retargeted": func(d string) error {
			os.Remove(filepath.Join(d, "l"))
			return os.Symlink("sub", filepath.Join(d, "l"))
		},
		"a folder made": func(d string) error { return os.Mkdir(filepath.Join(d, "sub", "new"), 0o755) },
		"hard-linked from outside": func(d string) error {
			return os.Link(filepath.Join(d, "sub", "b"), filepath.Join(outside, "b"+filepath.Base(d)))
		},
		"the folder replaced": func(d string) error {
			if err := os.Rename(d, d+".old"); err != nil {
				return err
			}
			return os.Mkdir(d, 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, w := mk(t)
			must(t, change(dir))
			if !w.Changed() {
				t.Error("not seen")
			}
			if !w.Changed() {
				t.Error("seen once, then forgotten")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
