//go:build unix

package gemkitdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRuntime: the runtime folder is made 0700; one of this user's
// that others may enter is made 0700 again; a link in its place, or a
// folder of another user's, is refused with what to do.
func TestMakeRuntime(t *testing.T) {
	rt, elsewhere := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	dir, err := MakeRuntime()
	if err != nil || dir != filepath.Join(rt, Name) {
		t.Fatalf("MakeRuntime = %s, %v; want %s", dir, err, filepath.Join(rt, Name))
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := MakeRuntime(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("a folder others may enter: %v %v, want it made 0700", fi.Mode(), err)
	}
	os.Remove(dir)
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := MakeRuntime(); err == nil || !strings.Contains(err.Error(), "is not a folder (a link?)") {
		t.Errorf("a link in its place: %v", err)
	}
	if os.Getuid() != 0 {
		return
	}
	os.Remove(dir)
	os.Mkdir(dir, 0o700)
	os.Chown(dir, 65534, 65534)
	if _, err := MakeRuntime(); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to this user") {
		t.Errorf("another user's: %v", err)
	}
}
