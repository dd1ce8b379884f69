package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// scanned is every entry Scan reports, with what it said of each, sorted.
func scanned(t *testing.T, r *Root, workers int, skip string) ([]string, map[string]ScanStat, error) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	stats := map[string]ScanStat{}
	err := r.Scan(workers, func(dir *ScanDir, rel string, st *ScanStat) error {
		if rel == skip {
			return fs.SkipDir
		}
		// A link is read beneath the folder passed: the entry is its.
		if st.Mode&fs.ModeSymlink != 0 {
			if _, err := dir.Readlink(path.Base(rel)); err != nil {
				return err
			}
		}
		mu.Lock()
		seen = append(seen, rel)
		stats[rel] = *st
		mu.Unlock()
		return nil
	})
	slices.Sort(seen)
	return seen, stats, err
}

// TestScanLikeWalk: Scan reports what Walk does, each entry once with
// its lstat (a link as a link, never followed), with one worker and with
// several; a folder skipped is not entered.
func TestScanLikeWalk(t *testing.T) {
	dir := wideTree(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := walked(t, r, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0), 8} {
		got, stats, err := scanned(t, r, workers, "")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%d workers: %v\n got %v\nwant %v", workers, err, got, want)
		}
		for rel, st := range stats {
			fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil || fi.Mode() != st.Mode || !fi.IsDir() && fi.Size() != st.Size || fi.ModTime().UnixNano() != st.Mtim {
				t.Errorf("%s: scanned %+v, lstat %v %v", rel, st, fi, err)
			}
		}
		if stats["link"].Mode&fs.ModeSymlink == 0 {
			t.Errorf("the link was followed: %v", stats["link"].Mode)
		}
	}
	got, _, err := scanned(t, r, 2, "node_modules/p03")
	if err != nil || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "node_modules/p03") }) || len(got) != len(want)-13 {
		t.Errorf("a skipped folder: %d entries (want %d), %v", len(got), len(want)-13, err)
	}
}

// TestScanChangedFolder: a folder swapped for a link to another, between
// its listing and its opening, is not entered: the scan fails with
// ErrChanged rather than read what the link leads to.
func TestScanChangedFolder(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "f"), []byte("f"), 0o644)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var entered []string
	err = r.Scan(1, func(d *ScanDir, rel string, st *ScanStat) error {
		entered = append(entered, rel)
		if rel == "a" {
			// Swapped once listed: a link now, to a folder outside.
			if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a.old")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(dir, "a"))
		}
		return nil
	})
	if !errors.Is(err, ErrChanged) || slices.Contains(entered, "a/secret") {
		t.Fatalf("scan of a folder swapped for a link: %v, entered %v", err, entered)
	}
}

// TestScanOpenStat: a file is opened beneath its folder, regular files
// only, never through a link.
func TestScanOpenStat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
	os.Symlink("f", filepath.Join(dir, "l"))
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Scan(1, func(d *ScanDir, rel string, st *ScanStat) error {
		f, ost, err := d.OpenStat(rel)
		switch rel {
		case "f":
			if err != nil || ost.Size != 4 || ost.Ino != st.Ino {
				t.Errorf("f: %+v %v", ost, err)
			}
			f.Close()
		case "l":
			if err == nil {
				f.Close()
				t.Errorf("a link was opened")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
