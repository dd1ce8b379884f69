//go:build unix

package fsutil

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

func TestRootOpenSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// With nobody writing, a blocking open of the FIFO would never return.
	if _, err := r.ReadFile("fifo", 0); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("reading a FIFO: %v, want ErrNotRegular", err)
	}
	if err := r.ReplaceFile("fifo", []byte("x")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("replacing a FIFO: %v, want ErrNotRegular", err)
	}
}

// OpenRegular and StatIn, for the paths gemkit trusts as a whole, still
// refuse what is not a regular file without blocking, and follow a link
// at the final name only while it stays inside.
func TestTrustedPathHelpers(t *testing.T) {
	dir, _ := rootTree(t)
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenRegular(fifo); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("OpenRegular of a FIFO: %v, want ErrNotRegular", err)
	}
	if f, err := OpenRegular(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if fi, err := StatIn(dir, "inside"); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("StatIn through an inside link: %v, %v", fi, err)
	}
	for _, name := range []string{"up", "abs", "stdin"} {
		if _, err := StatIn(dir, name); !errors.Is(err, ErrOutside) {
			t.Errorf("StatIn(%s): %v, want ErrOutside", name, err)
		}
	}
	if _, err := StatIn(dir, "sub/b.txt"); err == nil {
		t.Error("StatIn took a name of two components")
	}
}
