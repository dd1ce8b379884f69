package treewatch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNamesChanged: every way of changing a named file (or making one
// that was not there) or a listed folder's entries is seen; reading
// them, or changing another file beside a named one, is not.
func TestNamesChanged(t *testing.T) {
	mk := func(t *testing.T) (string, *Names) {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "list", "entry"), 0o755))
		must(t, os.MkdirAll(filepath.Join(dir, "state"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "state", "records.json"), []byte("{}"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "state", "other"), []byte("x"), 0o644))
		w, err := WatchNames([]string{filepath.Join(dir, "list")},
			[]string{filepath.Join(dir, "state", "records.json"), filepath.Join(dir, "list", "entry", ".env")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return dir, w
	}
	dir, w := mk(t)
	if _, err := os.ReadFile(filepath.Join(dir, "state", "records.json")); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "state", "other"), []byte("y"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "state", "new"), []byte("y"), 0o644))
	if w.Changed() {
		t.Fatal("names only read, or files beside them written, are said to have changed")
	}
	outside := t.TempDir()
	for name, change := range map[string]func(d string) error{
		"a named file written": func(d string) error {
			return os.WriteFile(filepath.Join(d, "state", "records.json"), []byte("[]"), 0o644)
		},
		"a named file renamed over": func(d string) error {
			must(t, os.WriteFile(filepath.Join(d, "state", ".tmp"), []byte("[]"), 0o644))
			return os.Rename(filepath.Join(d, "state", ".tmp"), filepath.Join(d, "state", "records.json"))
		},
		"a named file removed": func(d string) error { return os.Remove(filepath.Join(d, "state", "records.json")) },
		"a missing named file made": func(d string) error {
			return os.WriteFile(filepath.Join(d, "list", "entry", ".env"), []byte("A=1"), 0o644)
		},
		"a listed folder's entry made":    func(d string) error { return os.Mkdir(filepath.Join(d, "list", "another"), 0o755) },
		"a listed folder's entry removed": func(d string) error { return os.Remove(filepath.Join(d, "list", "entry")) },
		"a named file hard-linked from outside and written": func(d string) error {
			o := filepath.Join(outside, filepath.Base(d))
			must(t, os.Link(filepath.Join(d, "state", "records.json"), o))
			return os.WriteFile(o, []byte("[1]"), 0o644)
		},
		"a folder above replaced": func(d string) error {
			if err := os.Rename(filepath.Join(d, "state"), filepath.Join(d, "state.old")); err != nil {
				return err
			}
			must(t, os.Mkdir(filepath.Join(d, "state"), 0o755))
			return nil
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
