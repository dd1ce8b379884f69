package extension

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// agreedFixture is an installed-like extension folder with a stdio
// server, files of several modes, a link inside it, and what consent
// leaves out (.env, .git, the install metadata), and a store whose
// person agreed to it as it is.
func agreedFixture(t *testing.T) (*Store, *Extension) {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "agreed-ext")
	files := map[string]struct {
		data string
		mode fs.FileMode
	}{
		ManifestFile:              {`{"name": "agreed-ext", "version": "1.0.0", "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`, 0o644},
		"server.js":               {"console.log('v1')\n", 0o755},
		"lib/util.js":             {"module.exports = 1\n", 0o664},
		"lib/readonly.txt":        {"kept\n", 0o444},
		".env":                    {"TOKEN=secret\n", 0o600},
		".git/HEAD":               {"ref: refs/heads/main\n", 0o644},
		InstallMetadataFile:       {`{"source": "x", "type": "local"}`, 0o644},
		"node_modules/dep/one.js": {"exports.one = 1\n", 0o644},
	}
	for rel, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		// Whatever the umask.
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("lib/util.js", filepath.Join(dir, "util.js")); err != nil {
		t.Fatal(err)
	}
	// A link out of the folder, to a file of another program's: the
	// copy keeps the link and never reads what it leads to.
	outside := filepath.Join(t.TempDir(), "theirs.txt")
	if err := os.WriteFile(outside, []byte("not the extension's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "theirs.txt")); err != nil {
		t.Fatal(err)
	}
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := OpenStore(home)
	agree(t, st, ext)
	return st, ext
}

// agree records the person's consent to ext as its folder is now.
func agree(t *testing.T, st *Store, ext *Extension) {
	t.Helper()
	c, err := ReadContent(ext.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordConsentContent(ext.Manifest.Name, PermissionsHash(ext.Manifest), c); err != nil {
		t.Fatal(err)
	}
}

// TestKeepAgreedCopy: the copy holds the folder as the person agreed to
// it, byte for byte and mode for mode, without what consent leaves out;
// AgreedCopy names it while the manifest is the copy's, whatever else
// of the folder changed since, and never for a manifest that changed.
func TestKeepAgreedCopy(t *testing.T) {
	st, ext := agreedFixture(t)
	if got := st.AgreedCopy(ext); got != "" {
		t.Fatalf("AgreedCopy before any copy = %q, want none", got)
	}
	dir, err := st.KeepAgreedCopy(context.Background(), ext)
	if err != nil {
		t.Fatal(err)
	}
	agreed, err := ReadContent(ext.Dir)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Digest != agreed.Digest {
		t.Errorf("the copy's digest %s is not the folder's %s", copied.Digest, agreed.Digest)
	}
	for _, rel := range []string{".env", ".git", InstallMetadataFile} {
		if _, err := os.Lstat(filepath.Join(dir, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the copy holds %s, which consent leaves out (%v)", rel, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "lib", "util.js")); err != nil || fi.Mode().Perm() != 0o664 {
		t.Errorf("lib/util.js in the copy: %v, %v; want mode 0664 whatever the umask", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "util.js")); err != nil || target != "lib/util.js" {
		t.Errorf("the link in the copy leads to %q (%v), want lib/util.js", target, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "theirs.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link out is not a link in the copy (%v, %v): gemkit read what it leads to", fi, err)
	}
	if got := st.AgreedCopy(ext); got != dir {
		t.Errorf("AgreedCopy = %q, want %q", got, dir)
	}
	// Made again: the same copy, not another.
	if again, err := st.KeepAgreedCopy(context.Background(), ext); err != nil || again != dir {
		t.Errorf("KeepAgreedCopy again = %q, %v; want %q", again, err, dir)
	}

	// The server's code changes: the copy still serves, as agreed to.
	if err := os.WriteFile(filepath.Join(ext.Dir, "server.js"), []byte("console.log('v2')\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := st.AgreedCopy(ext); got != dir {
		t.Errorf("AgreedCopy after an edit of server.js = %q, want the copy %q", got, dir)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "server.js")); string(b) != "console.log('v1')\n" {
		t.Errorf("the copy's server.js = %q, want the agreed v1", b)
	}

	// The manifest changes: the servers' commands are read from it, so
	// no copy serves it.
	changed := *ext
	changed.Raw = append([]byte(nil), ext.Raw...)
	changed.Raw[len(changed.Raw)-1] = ' '
	if got := st.AgreedCopy(&changed); got != "" {
		t.Errorf("AgreedCopy of a changed manifest = %q, want none", got)
	}

	// Consent withdrawn: no copy serves, and none is kept.
	if err := st.ForgetConsent(ext.Manifest.Name); err != nil {
		t.Fatal(err)
	}
	if got := st.AgreedCopy(ext); got != "" {
		t.Errorf("AgreedCopy without consent = %q, want none", got)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the copy outlived the consent: %v", err)
	}
}

// TestKeepAgreedCopyRefuses: nothing is copied for an extension the
// person has not agreed to as it is, nor kept when the folder is not
// what they agreed to.
func TestKeepAgreedCopyRefuses(t *testing.T) {
	st, ext := agreedFixture(t)
	if err := os.WriteFile(filepath.Join(ext.Dir, "lib", "util.js"), []byte("module.exports = 2\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	if dir, err := st.KeepAgreedCopy(context.Background(), ext); err == nil {
		t.Fatalf("a copy of files changed since consent was kept in %s", dir)
	}
	entries, _ := os.ReadDir(st.agreedCopiesDir(ext.Manifest.Name))
	if len(entries) != 0 {
		t.Errorf("left in the copies' folder: %v", entries)
	}
	other := *ext
	m := *ext.Manifest
	m.Name = "never-agreed"
	other.Manifest = &m
	if _, err := st.KeepAgreedCopy(context.Background(), &other); !errors.Is(err, ErrNotAgreed) {
		t.Errorf("KeepAgreedCopy of an extension never agreed to: %v, want ErrNotAgreed", err)
	}
}

// TestAgreedCopiesPruned: a new copy leaves the one before it (a server
// started from it may still run) and removes older ones, and what a
// process left half made long ago.
func TestAgreedCopiesPruned(t *testing.T) {
	st, ext := agreedFixture(t)
	var made []string
	for i, v := range []string{"v2", "v3", "v4"} {
		dir, err := st.KeepAgreedCopy(context.Background(), ext)
		if err != nil {
			t.Fatal(err)
		}
		// Older by a minute each, as made one after the other.
		at := time.Now().Add(time.Duration(i-3) * time.Minute)
		os.Chtimes(dir, at, at)
		made = append(made, dir)
		if err := os.WriteFile(filepath.Join(ext.Dir, "server.js"), []byte("console.log('"+v+"')\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		agree(t, st, ext)
	}
	stale := filepath.Join(st.agreedCopiesDir(ext.Manifest.Name), ".making-123")
	os.MkdirAll(filepath.Join(stale, "tree"), 0o700)
	old := time.Now().Add(-2 * agreedStaleAfter)
	os.Chtimes(stale, old, old)
	last, err := st.KeepAgreedCopy(context.Background(), ext)
	if err != nil {
		t.Fatal(err)
	}
	for i, dir := range made {
		_, err := os.Lstat(dir)
		if kept := err == nil; kept != (i == len(made)-1) {
			t.Errorf("copy %d kept: %v, want only the one before the last", i, kept)
		}
	}
	if _, err := os.Lstat(last); err != nil {
		t.Errorf("the last copy: %v", err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a copy left half made two hours ago is still there: %v", err)
	}
}
