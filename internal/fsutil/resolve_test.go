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

func TestRootResolve(t *testing.T) {
	dir, _ := rootTree(t)
	for _, l := range []struct{ name, target string }{
		{"chain1", "chain2"}, {"chain2", "sub/b.txt"},
		{"loop1", "loop2"}, {"loop2", "loop1"},
		{"sub/updir", ".."}, {"climb", "sub/../../.env"},
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tests := []struct {
		name, want string
		err        error
	}{
		{"a.txt", "a.txt", nil},
		{".", ".", nil},
		{"inside", "sub/b.txt", nil},
		{"insidedir/b.txt", "sub/b.txt", nil},
		{"insidedir/new/deeper.txt", "sub/new/deeper.txt", nil},
		{"chain1", "sub/b.txt", nil},
		{"sub/updir/a.txt", "a.txt", nil},
		{"sub/around", "sub/b.txt", nil},
		{"missing/../a.txt", "a.txt", nil},
		{"up", "", ErrOutside},
		{"abs", "", ErrOutside},
		{"stdin", "", ErrOutside},
		{"outdir/c.txt", "", ErrOutside},
		{"climb", "", ErrOutside},
		{"../ext/a.txt", "", ErrOutside},
		{"loop1", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.name)
			switch {
			case tt.name == "loop1":
				if err == nil {
					t.Fatalf("a loop of links resolved to %q", got)
				}
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("Resolve = %q, %v; want %v", got, err, tt.err)
				}
			case err != nil || got != filepath.FromSlash(tt.want):
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The refusal of a link that leads out names the link and its target, so
// that a person knows which file to look at.
func TestRootOutsideSaysWhere(t *testing.T) {
	dir, _ := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.ReadFile("up", 0)
	if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), filepath.Join(dir, "up")) || !strings.Contains(err.Error(), "symbolic link to ../.env") {
		t.Fatalf("error %q: want one naming %s and its target", err, filepath.Join(dir, "up"))
	}
}

func TestRootOpenFolder(t *testing.T) {
	dir, _ := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sub, err := r.OpenFolder("sub")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	// A real name that has become a link, in or out, is refused.
	for _, name := range []string{"insidedir", "outdir"} {
		if _, err := r.OpenFolder(name); err == nil {
			t.Errorf("OpenFolder(%s), a link, was opened", name)
		}
	}
	if _, err := r.OpenFolder("insidedir"); !errors.Is(err, ErrChanged) {
		t.Errorf("OpenFolder through an inside link: %v, want ErrChanged", err)
	}
}

// Walk holds each folder open and never enters a link, even one swapped in
// for a folder while the walk is under way.
func TestRootWalkSwappedFolder(t *testing.T) {
	dir, _ := rootTree(t)
	outside := filepath.Join(filepath.Dir(dir), "outside")
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seen []string
	err = r.Walk(".", func(d *Root, name string, e fs.DirEntry) error {
		seen = append(seen, name)
		if name == "sub" {
			// The folder is replaced by a link out after it was listed.
			if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if !errors.Is(err, ErrOutside) && !errors.Is(err, ErrChanged) {
		t.Fatalf("Walk = %v, want the swapped folder refused", err)
	}
	if slices.Contains(seen, "sub/c.txt") {
		t.Fatalf("the walk entered the link: %v", seen)
	}
}

func TestRootWalkOpensByBaseName(t *testing.T) {
	dir, _ := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]string{}
	err = r.Walk(".", func(d *Root, name string, e fs.DirEntry) error {
		if e.Type().IsRegular() {
			data, err := d.ReadFile(e.Name(), 0)
			if err != nil {
				return err
			}
			got[name] = string(data)
		}
		if e.Name() == "skipme" {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["a.txt"] != "a\n" || got["sub/b.txt"] != "b\n" || len(got) != 2 {
		t.Fatalf("walk read %v", got)
	}
}

func TestRootCreateNewNeverThroughLink(t *testing.T) {
	dir, secret := rootTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"up", "abs", "a.txt", "inside"} {
		if f, err := r.CreateNew(name, 0o644); err == nil {
			f.Close()
			t.Errorf("CreateNew(%s) opened an existing name", name)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "GEMINI_API_KEY=secret\n" {
		t.Fatalf("the secret changed: %q", data)
	}
	if err := r.Symlink("../.env", "newlink"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFile("newlink", 0); !errors.Is(err, ErrOutside) {
		t.Fatalf("a link made through the Root is followed out: %v", err)
	}
}

func TestLinkCount(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(a)
	if n := LinkCount(fi); n != 1 {
		t.Fatalf("one name counts %d", n)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(a)
	if n := LinkCount(fi); n != 2 {
		t.Fatalf("two names count %d", n)
	}
}
