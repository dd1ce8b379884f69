package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateDir: the one check of every private folder a sandboxed
// server (or the placeholder locks) writes: the strictest of the three
// it replaces. A link on the way from home (the extensions' data folder's
// check), the folder or its parent a link (the language servers'), a
// folder others may enter or another user's (the placeholder locks')
// are each refused; a folder made afresh passes.
func TestPrivateDir(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	if err := PrivateDir(home, filepath.Join(home, ".local", "share", "gemkit", "x")); err != nil {
		t.Fatalf("a new folder: %v", err)
	}
	os.MkdirAll(filepath.Join(home, ".cache"), 0o755)
	os.Symlink(elsewhere, filepath.Join(home, ".cache", "gemkit"))
	os.MkdirAll(filepath.Join(home, "d"), 0o700)
	os.Symlink(elsewhere, filepath.Join(home, "d", "link"))
	open := filepath.Join(home, "open")
	os.MkdirAll(open, 0o755)
	os.Chmod(open, 0o755)
	cases := map[string]struct{ dir, want string }{
		"a link on the way":   {filepath.Join(home, ".cache", "gemkit", "langserver", "gopls"), "is not a folder of its own"},
		"the folder a link":   {filepath.Join(home, "d", "link"), "is not a folder of its own"},
		"others may enter it": {open, "only it may enter"},
		"a relative path":     {"rel/dir", "not an absolute path"},
	}
	if os.Getuid() == 0 {
		theirs := filepath.Join(t.TempDir(), "theirs")
		os.Mkdir(theirs, 0o700)
		os.Chown(theirs, 65534, 65534)
		cases["another user's"] = struct{ dir, want string }{theirs, "a folder of this user's"}
	}
	for name, c := range cases {
		if err := PrivateDir(home, c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestCacheOverlapsExtension: a server's private folder that holds, or
// lies in, an extension's folder (read-only to every sandboxed process)
// is refused, as a closed one is.
func TestCacheOverlapsExtension(t *testing.T) {
	ws, ext, tmp, cache := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	linked := filepath.Join(cache, "linked-ext")
	os.Mkdir(linked, 0o755)
	p := Policy{Read: "workspace", Write: "none", Workspace: ws, ExtensionDir: ext, TempDir: tmp, Caches: []string{cache}, ReadOnly: []string{linked}}
	if _, err := p.Rules(); err == nil || !strings.Contains(err.Error(), "an extension's folder, which stays read-only") {
		t.Errorf("a cache holding an extension's folder: %v", err)
	}
	p.ReadOnly = []string{filepath.Dir(cache)}
	if _, err := p.Rules(); err == nil || !strings.Contains(err.Error(), "an extension's folder, which stays read-only") {
		t.Errorf("a cache inside an extension's folder: %v", err)
	}
}

// TestLookServer: a server's command is a name found on the PATH a
// server may start from, or a program's full path (a config entry's
// "command": ["/opt/go/bin/gopls"], as docs/code-intel.md shows); a
// relative path, a folder or a file that cannot be run is not found.
func TestLookServer(t *testing.T) {
	bin, opt := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(bin, "gopls"), filepath.Join(opt, "gopls")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(opt, "notes"), []byte("x"), 0o644)
	ws := t.TempDir()
	planted := filepath.Join(ws, "node_modules", ".bin")
	os.MkdirAll(planted, 0o755)
	os.WriteFile(filepath.Join(planted, "tsserver"), []byte("#!/bin/sh\n"), 0o755)
	look := LookServer(planted+":"+bin, []string{ws})
	cases := []struct{ command, want string }{
		{"gopls", filepath.Join(bin, "gopls")},
		{filepath.Join(opt, "gopls"), filepath.Join(opt, "gopls")},
		{"bin/gopls", ""},
		{opt, ""},
		{filepath.Join(opt, "notes"), ""},
		{filepath.Join(opt, "missing"), ""},
	}
	for _, c := range cases {
		got, err := look(c.command)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("look(%q) = %q, %v; want %q", c.command, got, err, c.want)
		}
	}
	// Found only in the workspace: not taken, and the error says where.
	_, err := look("tsserver")
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Skipped != filepath.Join(planted, "tsserver") || !strings.Contains(err.Error(), "on PATH only as "+nf.Skipped) {
		t.Errorf("a program only in the workspace: %v", err)
	}
}
