package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rootTree makes a folder holding a tree and, beside it, a secret that
// links inside the tree point at.
func rootTree(t *testing.T) (dir, secret string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "ext")
	secret = filepath.Join(base, ".env")
	for _, d := range []string{"ext/sub", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{".env": "GEMINI_API_KEY=secret\n", "ext/a.txt": "a\n", "ext/sub/b.txt": "b\n", "outside/c.txt": "c\n"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(base, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"ext/inside":     "sub/b.txt",
		"ext/insidedir":  "sub",
		"ext/up":         "../.env",
		"ext/sub/up2":    "../../.env",
		"ext/abs":        secret,
		"ext/stdin":      "/proc/self/fd/0",
		"ext/outdir":     "../outside",
		"ext/devnull":    "/dev/null",
		"ext/sub/around": "../sub/b.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, secret
}

func TestRootRefusesLinksOut(t *testing.T) {
	dir, _ := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tests := []struct {
		name string
		want string // content, or "" when refused
		err  error
	}{
		{"a.txt", "a\n", nil},
		{"sub/b.txt", "b\n", nil},
		{"inside", "b\n", nil},
		{"insidedir/b.txt", "b\n", nil},
		{"sub/around", "b\n", nil},
		{"up", "", ErrOutside},
		{"sub/up2", "", ErrOutside},
		{"abs", "", ErrOutside},
		{"stdin", "", ErrOutside},
		{"devnull", "", ErrOutside},
		{"outdir/c.txt", "", ErrOutside},
		{"../.env", "", ErrOutside},
		{"sub/../../.env", "", ErrOutside},
		{"sub", "", ErrNotRegular},
		{"missing", "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ReadFile(tt.name, 0)
			if tt.err == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadFile = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("ReadFile = %q, %v; want an error that is %v", got, err, tt.err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != filepath.Join(dir, tt.name) {
				t.Errorf("error %v does not name %s", err, filepath.Join(dir, tt.name))
			}
		})
	}
}

func TestRootReadLimit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.ReadFile("f", 10); err != nil || string(got) != "0123456789" {
		t.Errorf("at the limit: %q, %v", got, err)
	}
	if _, err := r.ReadFile("f", 9); err == nil {
		t.Error("a file over the limit was read")
	}
}

// A file may hold more than fstat said when ReadFile opened it (it grew
// since, or it is a file of /proc, whose size is 0): the read goes on to
// its end, within the limit.
func TestRootReadPastStatSize(t *testing.T) {
	content := strings.Repeat("0123456789", 100)
	for _, tt := range []struct {
		size, limit int64
		want        int
		wantErr     bool
	}{
		{size: 0, limit: 0, want: 1000},
		{size: 10, limit: 0, want: 1000},
		{size: 2000, limit: 0, want: 1000},
		{size: 0, limit: 1000, want: 1000},
		{size: 0, limit: 999, want: 1000}, // limit+1 read: ReadFile refuses it
	} {
		got, err := readAll(strings.NewReader(content), tt.size, tt.limit)
		if err != nil || len(got) != tt.want || string(got) != content[:tt.want] {
			t.Errorf("size %d, limit %d: %d bytes, %v; want %d", tt.size, tt.limit, len(got), err, tt.want)
		}
	}
}

func TestRootWritesNeverThroughLinks(t *testing.T) {
	dir, secret := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A link at the final name is replaced by the file; its target stays.
	if err := r.WriteFileAtomic("up", []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "up")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("up after the write: %v, %v; want a regular file", fi, err)
	}
	if data, _ := os.ReadFile(secret); string(data) != "GEMINI_API_KEY=secret\n" {
		t.Errorf("the link's target changed: %q", data)
	}
	// A link on the way out is refused, and nothing is written there.
	for _, name := range []string{"outdir/new.txt", "../escape.txt"} {
		if err := r.ReplaceFile(name, []byte("x")); !errors.Is(err, ErrOutside) {
			t.Errorf("ReplaceFile(%s) = %v, want ErrOutside", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside", "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was written outside: %v", err)
	}
	// ReplaceFile keeps the mode and makes the folders a new file needs.
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := r.ReplaceFile("a.txt", []byte("A\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a.txt")); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode %v, want 0750 kept", fi.Mode().Perm())
	}
	if err := r.ReplaceFile("new/deep/f.go", []byte("package deep\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "new/deep/f.go")); err != nil || string(data) != "package deep\n" {
		t.Errorf("new file: %q, %v", data, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestRootWalkAndSubRoots(t *testing.T) {
	dir, _ := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seen []string
	err = r.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen = append(seen, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Links are listed, never entered: nothing of outside/ appears.
	for _, want := range []string{"a.txt", "sub/b.txt", "outdir", "insidedir"} {
		if !slices.Contains(seen, want) {
			t.Errorf("walk missed %s: %v", want, seen)
		}
	}
	if slices.Contains(seen, "outdir/c.txt") || slices.Contains(seen, "insidedir/b.txt") {
		t.Errorf("walk entered a linked folder: %v", seen)
	}
	if _, err := r.OpenRoot("outdir"); !errors.Is(err, ErrOutside) {
		t.Errorf("OpenRoot through a link out: %v, want ErrOutside", err)
	}
	sub, err := r.OpenRoot("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.ReadFile("up2", 0); !errors.Is(err, ErrOutside) {
		t.Errorf("a sub-root read ../../.env: %v", err)
	}
	if _, err := r.Rel(filepath.Join(filepath.Dir(dir), "outside")); !errors.Is(err, ErrOutside) {
		t.Errorf("Rel of a path outside: %v", err)
	}
	if rel, err := r.Rel(filepath.Join(dir, "sub", "b.txt")); err != nil || rel != filepath.Join("sub", "b.txt") {
		t.Errorf("Rel inside = %q, %v", rel, err)
	}
}
