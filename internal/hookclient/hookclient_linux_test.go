package hookclient

import (
	"testing"

	"github.com/gemkit/gemkit/internal/lspbroker"
)

// TestDir: the client looks for warm sandboxes in the folder their
// servers make (lspbroker.Dir), whatever the environment names.
func TestDir(t *testing.T) {
	for _, env := range []map[string]string{
		{"XDG_RUNTIME_DIR": t.TempDir()},
		{"XDG_RUNTIME_DIR": "", "TMPDIR": t.TempDir()},
		{"XDG_RUNTIME_DIR": "relative", "TMPDIR": "/tmp/" + string(make([]byte, 0)) + "a-very-long-temporary-folder-name-that-does-not-fit-in-a-socket-path"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		want, err := lspbroker.Dir()
		if err != nil {
			t.Fatal(err)
		}
		if got := Dir(); got != want {
			t.Errorf("%v: Dir %s, the servers' %s", env, got, want)
		}
	}
}
