package extmcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestPolicyWritable: a link out of an extension's folder into the home
// folder names code consent does not bind for its MCP servers once an
// installed extension's tools may write the home folder, as it does for
// a tool (permission.Untrusted); the workspace and the servers' data
// folders are always such folders.
func TestPolicyWritable(t *testing.T) {
	tmp := t.TempDir()
	home, ws := filepath.Join(tmp, "home"), filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	p := Policy{Store: st, Home: home}
	data := filepath.Join(home, ".local", "share", "gemkit", "extension-data")
	got := p.Writable()
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
	if got := p.Writable(); !slices.Contains(got, home) {
		t.Errorf("an installed extension's tools may write the home folder, which is not among %v", got)
	}
}

// TestNotServedCopiedLinks: a server not served only because of links a
// copy made absolute names the command that repairs them; with another
// reason besides, that reason.
func TestNotServedCopiedLinks(t *testing.T) {
	links := []extension.CopiedLink{{Path: "node_modules/.bin/tsc", Target: "/tmp/src/node_modules/tsc/bin/tsc", From: "/tmp/src", Inside: "node_modules/tsc/bin/tsc"}}
	be := &extension.BindError{Dir: "/ext", LinksOut: []extension.LinkOut{{Path: "node_modules/.bin/tsc", Target: "/tmp/src/node_modules/tsc/bin/tsc", Writable: "/tmp"}}}
	err := NotServed(extension.ConsentState{Unbound: be}, "bins", links)
	if err == nil || !strings.Contains(err.Error(), "1 link of the extension leads back into the folder it was copied from, /tmp/src") ||
		!strings.Contains(err.Error(), "Run `gemkit extensions consent bins --grant`: it makes them relative again once you agree") {
		t.Errorf("copied links only: %v", err)
	}
	be.Shared = []string{"server.js"}
	if err := NotServed(extension.ConsentState{Unbound: be}, "bins", links); err == nil || !strings.Contains(err.Error(), "another name on disk") {
		t.Errorf("another reason besides: %v", err)
	}
}
