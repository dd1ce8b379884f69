package hookclient

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// TestDir: the client looks for warm sandboxes in the folder their
// servers make (gemkitdir.MakeRuntime), whatever the environment names, clean
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
		want, err := gemkitdir.MakeRuntime()
		if err != nil {
			t.Fatal(err)
		}
		got := Dir()
		if got != want {
			t.Errorf("%v: Dir %q, the servers' %s", tc.env, got, want)
		}
	}
}

// TestEarlyInit: the package imports nothing that waits for reflect or
// unicode's tables, which sort after its path: its init then runs right
// after os's, before the dozens of inits (encoding/gob, encoding/json,
// crypto's) that wait for them (see init). One import of fmt, strings
// or crypto/sha256 would put the client's init back after them all.
func TestEarlyInit(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH to list the imports with (go test puts its own there): %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "reflect" || dep == "unicode" {
			t.Errorf("the package imports %s (through one of its imports): its init would wait for most of the standard library's", dep)
		}
	}
	if id := []byte("x"); len(KeyOf(id)) != 32 || KeyOf(id) == KeyOf([]byte("y")) {
		t.Errorf("KeyOf: %q", KeyOf(id))
	}
	for _, a := range []Answer{{Code: 0}, {Code: 2}, {Code: 1, Refused: "not consented:\nthe files changed"}} {
		if got, err := DecodeAnswer(a.Encode()); err != nil || got != a {
			t.Errorf("DecodeAnswer(Encode(%+v)) = %+v, %v", a, got, err)
		}
	}
	if _, err := DecodeAnswer(nil); err == nil {
		t.Error("an empty answer decoded")
	}
}
