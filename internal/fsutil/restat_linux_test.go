package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRestat: folders entered in any order are the ones below the Root,
// each opened beneath the one before it; a link on the way is
// ErrChanged, never followed (to a folder outside or inside), and a name
// that is not one name is refused.
func TestRestat(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"a/b/c", "a/b-x", "d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "a/b/c/f"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "out"))
	os.Symlink("a", filepath.Join(dir, "in"))
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rs, err := r.Restat()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for _, rel := range []string{"", "a/b/c", "a/b-x", "a", "d", "a/b/c", "a/b"} {
		st, err := rs.Dir(rel)
		fi, _ := os.Lstat(filepath.Join(dir, rel))
		if err != nil || !st.Mode.IsDir() || st.Ino != scanStatOfInfo(fi).Ino {
			t.Fatalf("Dir(%q): %+v, %v", rel, st, err)
		}
	}
	if st, err := rs.Lstat("a/b/c", "f"); err != nil || !st.Mode.IsRegular() || st.Size != 1 {
		t.Fatalf("Lstat: %+v, %v", st, err)
	}
	if st, err := rs.Lstat("", "out"); err != nil || st.Mode&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat of a link: %+v, %v", st, err)
	}
	for _, rel := range []string{"out", "in", "in/b", "a/b/c/f"} {
		if _, err := rs.Dir(rel); !errors.Is(err, ErrChanged) {
			t.Errorf("Dir(%q): %v, want ErrChanged", rel, err)
		}
	}
	for _, name := range []string{"", "b/c", ".."} {
		if _, err := rs.Lstat("a", name); err == nil {
			t.Errorf("Lstat(a, %q) passed", name)
		}
	}
	if _, err := rs.Dir("a/../d"); err == nil {
		t.Error(`Dir("a/../d") passed`)
	}
}
