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
