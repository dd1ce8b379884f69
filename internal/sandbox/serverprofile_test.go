package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
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

// TestServerProfileShown: a server shown another folder in place of its
// own (gemkit's copy of an extension as agreed to) has its program read
// there: a link or an interpreter line put in its own folder since
// (which does not run) leads none of its runtime folders elsewhere; a
// link of the shown folder that leads out is followed as it runs.
func TestServerProfileShown(t *testing.T) {
	ws, home, own, shown, elsewhere := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	secret := filepath.Join(elsewhere, "bin", "interp")
	os.MkdirAll(filepath.Dir(secret), 0o755)
	os.WriteFile(secret, []byte("#!/bin/sh\n"), 0o755)
	// Since agreed to, its own folder's program is a link out, and its
	// script names another interpreter.
	os.Symlink(secret, filepath.Join(own, "server"))
	os.WriteFile(filepath.Join(own, "script"), []byte("#!"+secret+"\n"), 0o755)
	// What runs: the copy's.
	os.WriteFile(filepath.Join(shown, "server"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(shown, "script"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("/bin/sh", filepath.Join(shown, "out"))
	os.Symlink("/bin/sh", filepath.Join(own, "out"))
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": home}
	profile := func(program, shownAt string) *ServerProfile {
		t.Helper()
		pr, err := NewServerProfile(ServerSetup{Workspace: ws, Env: env, Program: filepath.Join(own, program), AbsoluteIn: own, Own: own, Shown: shownAt, Plan: true})
		if err != nil {
			t.Fatalf("%s: %v", program, err)
		}
		return pr
	}
	leads := func(pr *ServerProfile) bool {
		for _, r := range pr.Runtime {
			if strings.HasPrefix(r, elsewhere) {
				return true
			}
		}
		return false
	}
	for _, program := range []string{"server", "script"} {
		if pr := profile(program, ""); !leads(pr) {
			t.Errorf("%s without a shown folder: runtime %v, want the folder it leads to (the check of the folder refuses it)", program, pr.Runtime)
		}
		pr := profile(program, shown)
		if leads(pr) {
			t.Errorf("%s shown the copy: runtime %v leads where its own folder's changed file does", program, pr.Runtime)
		}
		if want := filepath.Join(own, program); pr.Real != want {
			t.Errorf("%s shown the copy: real path %s, want %s, where it runs", program, pr.Real, want)
		}
	}
	if pr := profile("out", shown); pr.Real != fsutil.RealPath("/bin/sh") {
		t.Errorf("a link of the copy that leads out: real path %s, want %s", pr.Real, fsutil.RealPath("/bin/sh"))
	}
}
