package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestServerWritable: a link out of an extension's folder into the home
// folder names code consent does not bind for its MCP servers once an
// installed extension's tools may write the home folder, as it does for
// a tool (permission.Untrusted); the workspace and the servers' data
// folders are always such folders.
func TestServerWritable(t *testing.T) {
	tmp := t.TempDir()
	home, ws := filepath.Join(tmp, "home"), filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	a := &app{lookupEnv: func(k string) (string, bool) {
		if k == "HOME" {
			return home, true
		}
		return "", false
	}}
	data := filepath.Join(home, ".local", "share", "gemkit", "extension-data")
	got := serverWritable(a, st)
	if !slices.Contains(got, ws) || !slices.Contains(got, data) || slices.Contains(got, home) {
		t.Errorf("with no extension writing the home folder: %v", got)
	}
	src := filepath.Join(tmp, "src", "homewriter")
	if err := os.MkdirAll(filepath.Join(src, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "homewriter", "version": "1.0.0", "description": "Writes the home folder.",
 "permissions": {"filesystem": {"read": "home", "write": "home"}},
 "tools": [{"name": "hello", "description": "Says hello.", "executable": "tools/hello.sh", "runtime": "shell"}]}`), 0o644)
	os.WriteFile(filepath.Join(src, "tools", "hello.sh"), []byte("echo hello\n"), 0o755)
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	if got := serverWritable(a, st); !slices.Contains(got, home) {
		t.Errorf("an installed extension's tools may write the home folder, which is not among %v", got)
	}
}
