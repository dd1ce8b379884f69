package hookclient

import (
	"testing"

	"github.com/gemkit/gemkit/internal/lspbroker"
)

// TestDir: the client looks for warm sandboxes in the folder their
// servers make (lspbroker.Dir), whatever the environment names, clean
// or not.
func TestDir(t *testing.T) {
	for _, tc := range []struct {
		env map[string]string
	}{
		{map[string]string{"XDG_RUNTIME_DIR": t.TempDir()}},
		{map[string]string{"XDG_RUNTIME_DIR": "", "TMPDIR": t.TempDir()}},
		{map[string]string{"XDG_RUNTIME_DIR": "relative", "TMPDIR": "/tmp/a-very-long-temporary-folder-name-that-does-not-fit-in-a-socket-path"}},
		{map[string]string{"XDG_RUNTIME_DIR": t.TempDir() + "/"}},
		{map[string]string{"XDG_RUNTIME_DIR": "", "TMPDIR": t.TempDir() + "//"}},
		{map[string]string{"XDG_RUNTIME_DIR": t.TempDir() + "//x/.."}},
		{map[string]string{"XDG_RUNTIME_DIR": t.TempDir() + "/./x"}},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		want, err := lspbroker.Dir()
		if err != nil {
			t.Fatal(err)
		}
		got := Dir()
		if got != want {
			t.Errorf("%v: Dir %q, the servers' %s", tc.env, got, want)
		}
	}
}
