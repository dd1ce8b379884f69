//go:build unix

package extension

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKeepAgreedCopyNamesFIFO: a FIFO, which consent's digest counts and
// no copy holds, is named as what keeps gemkit from copying the folder,
// not as a change since the person agreed.
func TestKeepAgreedCopyNamesFIFO(t *testing.T) {
	st, ext := agreedFixture(t)
	if err := unix.Mkfifo(filepath.Join(ext.Dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	agree(t, st, ext)
	_, err := st.KeepAgreedCopy(context.Background(), ext)
	if err == nil || !strings.Contains(err.Error(), "holds pipe, which is neither a file nor a link") || strings.Contains(err.Error(), "changed since") {
		t.Errorf("KeepAgreedCopy of a folder holding a FIFO: %v", err)
	}
}
