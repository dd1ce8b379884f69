//go:build unix

package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChooseSkipsWhatIsNotAFile plants, in the shared folder, a named pipe
// and a directory with discovery file names: neither may hang the choice
// (opening a pipe waits for a writer) or be taken for a companion.
func TestChooseSkipsWhatIsNotAFile(t *testing.T) {
	f := newFixture(t)
	ws := f.folder("ws")
	if err := syscall.Mkfifo(filepath.Join(f.dir, FileName(99999998, 4001)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, FileName(99999997, 4002)), 0o700); err != nil {
		t.Fatal(err)
	}
	f.write(FileName(99999000, 4003), map[string]any{"port": 4003, "workspacePath": ws})
	done := make(chan *Choice, 1)
	go func() { done <- f.choose(1, ws, nil) }()
	select {
	case ch := <-done:
		if got := chosen(ch); got != FileName(99999000, 4003) {
			t.Errorf("chose %s", got)
		}
		for _, c := range ch.Candidates {
			if c.Port != 4003 && (c.Err == nil || !strings.Contains(c.Err.Error(), "not a regular file")) {
				t.Errorf("%s: err %v", c.Name, c.Err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Choose hangs on a named pipe")
	}
}
