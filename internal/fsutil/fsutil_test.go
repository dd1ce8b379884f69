package fsutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRel(t *testing.T) {
	dir := filepath.FromSlash("/home/u/project")
	tests := []struct {
		name   string
		p      string
		want   string
		within bool
		strict bool
	}{
		{"the folder itself", "/home/u/project", ".", true, false},
		{"a file inside", "/home/u/project/a/b.go", "a/b.go", true, true},
		{"a folder named ..gemini inside", "/home/u/project/..gemini/extensions", "..gemini/extensions", true, true},
		{"a file named .. something", "/home/u/project/...", "...", true, true},
		{"the parent", "/home/u", "", false, false},
		{"a sibling", "/home/u/other/x", "", false, false},
		{"a sibling sharing the prefix", "/home/u/project2/x", "", false, false},
		{"climbing back in", "/home/u/project/a/../../project/b", "b", true, true},
		{"a relative path", "project/a", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.FromSlash(tt.p)
			got, ok := Rel(dir, p)
			if ok != tt.within || got != filepath.FromSlash(tt.want) {
				t.Errorf("Rel(%q, %q) = %q, %v; want %q, %v", dir, p, got, ok, tt.want, tt.within)
			}
			if w := Within(dir, p); w != tt.within {
				t.Errorf("Within = %v, want %v", w, tt.within)
			}
			if s := StrictlyWithin(dir, p); s != tt.strict {
				t.Errorf("StrictlyWithin = %v, want %v", s, tt.strict)
			}
		})
	}
}

// TestWriteFileAtomic checks WriteFileAtomic and PublishFile, which
// differ only in what they sync.
func TestWriteFileAtomic(t *testing.T) {
	for name, write := range map[string]func(string, []byte, fs.FileMode) error{
		"WriteFileAtomic": WriteFileAtomic,
		"PublishFile":     PublishFile,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			for _, data := range []string{"first", "second, longer"} {
				if err := write(path, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != data {
					t.Fatalf("read back %q, %v; want %q", got, err, data)
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("folder holds %d entries, want only the file (no temporary left)", len(entries))
			}
			if err := write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
				t.Error("a write into a missing folder succeeded")
			}
		})
	}
}

func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(existing, []byte("old"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFile(existing, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(existing); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("replaced file: %v, %v; want mode 0750 kept", fi.Mode(), err)
	}
	fresh := filepath.Join(dir, "new", "pkg", "f.go")
	if err := ReplaceFile(fresh, []byte("package pkg\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v, %v; want mode 0644 in new folders", fi.Mode(), err)
	}
}

// TestWithinAbsolute: absolute paths are compared as Rel would compare
// them, the root included, without allocating (the sandbox asks this of
// every pair of its mounts).
func TestWithinAbsolute(t *testing.T) {
	root := string(filepath.Separator)
	tests := []struct {
		dir, p string
		want   bool
	}{
		{root, root, true},
		{root, "/etc/passwd", true},
		{"/home/u", "/home/u", true},
		{"/home/u/", "/home/u/x", true},
		{"/home/u", "/home/u/../u/x", true},
		{"/home/u", "/home/uv", false},
		{"/home/u", "/home", false},
		{"/home/u/x/..", "/home/u/y", true},
	}
	for _, tt := range tests {
		dir, p := filepath.FromSlash(tt.dir), filepath.FromSlash(tt.p)
		_, rel := Rel(dir, p)
		if got := Within(dir, p); got != tt.want || got != rel {
			t.Errorf("Within(%q, %q) = %v, Rel says %v; want %v", dir, p, got, rel, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Within("/home/u/project", "/home/u/project/a/b.go") }); n != 0 {
		t.Errorf("Within allocates %v times per call", n)
	}
}

// TestRealPath: links are resolved, and a path that does not resolve
// stays as written, cleaned.
func TestRealPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	for in, want := range map[string]string{
		filepath.Join(dir, "link"):              filepath.Join(dir, "real"),
		dir + "/link/../real/./":                filepath.Join(dir, "real"),
		filepath.Join(dir, "missing") + "/a/..": filepath.Join(dir, "missing"),
	} {
		if got := RealPath(in); got != want {
			t.Errorf("RealPath(%q) = %q, want %q", in, got, want)
		}
	}
}
