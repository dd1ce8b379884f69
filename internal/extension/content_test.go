package extension

import (
	"os"
	"path/filepath"
	"testing"
)

// TestContentDigest: the digest follows the code (content, modes,
// symlinks, new files) and not the person's settings or gemkit's install
// metadata.
func TestContentDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	write(ManifestFile, "{}", 0o644)
	write("tools/t.sh", "echo hi\n", 0o755)
	digest := func() string {
		t.Helper()
		d, err := ContentDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest()
	write(".env", "TOKEN=x\n", 0o600)
	write(InstallMetadataFile, `{"source": "x"}`, 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	write(".git/HEAD", "ref\n", 0o644)
	if d := digest(); d != base {
		t.Fatal("settings, install metadata or .git changed the digest")
	}
	for _, change := range []func(){
		func() { write("tools/t.sh", "echo planted\n", 0o755) },
		func() { os.Chmod(filepath.Join(dir, "tools/t.sh"), 0o644) },
		func() { write("tools/new.py", "", 0o644) },
		func() { os.Symlink("/etc/passwd", filepath.Join(dir, "link")) },
	} {
		before := digest()
		change()
		if digest() == before {
			t.Fatal("a change of the code kept the digest")
		}
	}
}

// TestConsentContentRecords: consent binds to the files; a record written
// before that (permissions only) is still read, with no digest.
func TestConsentContentRecords(t *testing.T) {
	s := OpenStore(t.TempDir())
	if err := s.RecordConsent("old", "h1"); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.ConsentContent("old", "h1"); !ok || d != "" {
		t.Fatalf("old record: %q %v", d, ok)
	}
	if !s.ConsentGranted("old", "h1") {
		t.Fatal("old record not granted")
	}
	if err := s.RecordConsentContent("new", "h2", "sha256:abc"); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.ConsentContent("new", "h2"); !ok || d != "sha256:abc" {
		t.Fatalf("new record: %q %v", d, ok)
	}
	if _, ok := s.ConsentContent("new", "other"); ok {
		t.Fatal("other permissions granted")
	}
}
