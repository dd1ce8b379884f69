package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// wideTree makes folders of files, nested, as a node_modules lays them
// out: packages of a few folders each, at two levels.
func wideTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p := range 30 {
		for _, sub := range []string{"lib", "lib/x", "dist"} {
			d := filepath.Join(dir, "node_modules", fmt.Sprintf("p%02d", p), sub)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for f := range 3 {
				if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", f)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := os.Symlink("node_modules/p00", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// walked is every entry WalkConcurrent (workers of them) or Walk
// (workers 0) reports, sorted.
func walked(t *testing.T, r *Root, workers int, skip string) ([]string, error) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	fn := func(dir *Root, name string, d fs.DirEntry) error {
		if name == skip {
			return fs.SkipDir
		}
		// The folder passed is the entry's own: the entry is found in it.
		if _, err := dir.Lstat(d.Name()); err != nil {
			return fmt.Errorf("%s not in the folder passed: %w", name, err)
		}
		mu.Lock()
		seen = append(seen, name)
		mu.Unlock()
		return nil
	}
	var err error
	if workers == 0 {
		err = r.Walk(".", fn)
	} else {
		err = r.WalkConcurrent(".", workers, fn)
	}
	slices.Sort(seen)
	return seen, err
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil && runtime.GOOS != "linux" {
		t.Skipf("counting open descriptors reads /proc/self/fd, which %s lacks (Linux, where CI runs, has it)", runtime.GOOS)
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestWalkConcurrent: the concurrent walk reports what Walk does, links
// listed and never entered, folders left out by SkipDir, the first
// error of the callback, and leaves no descriptor open.
func TestWalkConcurrent(t *testing.T) {
	dir := wideTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := walked(t, r, 0, "node_modules/p03")
	if err != nil {
		t.Fatal(err)
	}
	// link and node_modules, then 29 packages of 3 folders of 3 files.
	if len(want) != 2+29*(1+3+3*3) || slices.Contains(want, "link/lib") || slices.Contains(want, "node_modules/p03/lib") {
		t.Fatalf("Walk saw %d entries", len(want))
	}
	before := openFDs(t)
	for _, workers := range []int{1, 2, 8} {
		got, err := walked(t, r, workers, "node_modules/p03")
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d workers saw %d entries, want the %d of Walk", workers, len(got), len(want))
		}
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{{"error", boom, boom}, {"skip all", fs.SkipAll, nil}} {
		err := r.WalkConcurrent(".", 2, func(dir *Root, name string, d fs.DirEntry) error {
			if strings.HasSuffix(name, "p07/lib/x/f1.js") {
				return tc.err
			}
			return nil
		})
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// No runtime.GC first: it would let os.File's cleanup close a
	// descriptor the walk leaked before it is counted.
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before the walks, %d after", before, after)
	}
}

// TestOpenListed: a folder swapped, after its listing, for another or
// for a link to one is refused, never entered.
func TestOpenListed(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	listed, err := r.Lstat("a")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := r.openListed("a", listed)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a-was")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.openListed("a", listed); !errors.Is(err, ErrChanged) {
		t.Errorf("a folder swapped for a link: %v, want ErrChanged", err)
	}
	os.Remove(filepath.Join(dir, "a"))
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.openListed("a", listed); !errors.Is(err, ErrChanged) {
		t.Errorf("a folder swapped for another: %v, want ErrChanged", err)
	}
}

// TestWalkConcurrentSkipDirFromFile: fs.SkipDir returned for a file
// leaves out the rest of the folder holding it, as Walk and fs.WalkDir
// do, and nothing more: the walk goes on, and no entry elsewhere is
// missed.
func TestWalkConcurrentSkipDirFromFile(t *testing.T) {
	dir := wideTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const skip = "node_modules/p05/lib/f0.js"
	want, err := walked(t, r, 0, skip)
	if err != nil {
		t.Fatal(err)
	}
	// All but the file and what follows it in its folder: f1.js, f2.js,
	// and x with its 3 files.
	if len(want) != 2+30*(1+3+3*3)-7 {
		t.Fatalf("Walk saw %d entries", len(want))
	}
	for _, workers := range []int{1, 2, 8} {
		got, err := walked(t, r, workers, skip)
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d workers saw %d entries, want the %d of Walk", workers, len(got), len(want))
		}
	}
}
