//go:build linux

package extension

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestFastCheck: a warm check of a tree the digest cache describes takes
// the recorded digest with no folder listed (the fast check), and only
// then; every change to what the digest covers, or to the folders'
// names, and a racy or cut cache, make it read the tree again, and the
// Content it gives is the full read's (digest, files with another name,
// links out, the per-file list), with one worker and with several.
func TestFastCheck(t *testing.T) {
	outside := t.TempDir()
	for _, big := range []bool{false, true} {
		for _, tc := range fastCheckCases(outside) {
			t.Run(fmt.Sprintf("%s/big=%v", tc.name, big), func(t *testing.T) {
				dir := fastCheckTree(t, big)
				made := time.Now()
				later := made.Add(10 * time.Second)
				cache := filepath.Join(t.TempDir(), digestCacheDir, "c")
				first := openDigestCache(cache, made.Add(tc.firstAt))
				c1, err := readContentCached(dir, first)
				if err != nil {
					t.Fatal(err)
				}
				if first.fasted {
					t.Fatal("the first check, with no cache, was the fast one")
				}
				if len(c1.Shared) == 0 || len(c1.LinksOut) != 1 {
					t.Fatalf("the tree has shared files %v and links out %v", c1.Shared, c1.LinksOut)
				}
				tc.change(t, dir, cache)
				second := openDigestCache(cache, later)
				c2, err := readContentCached(dir, second)
				if err != nil {
					t.Fatal(err)
				}
				if second.fasted != tc.fast {
					t.Fatalf("fast check taken = %v, want %v", second.fasted, tc.fast)
				}
				if (c2.Digest == c1.Digest) != tc.same {
					t.Fatalf("digest kept = %v, want %v", c2.Digest == c1.Digest, tc.same)
				}
				want := readFull(t, dir)
				if c2.Digest != want.Digest || !slices.Equal(c2.Shared, want.Shared) || !maps.Equal(c2.LinksOut, want.LinksOut) || !maps.Equal(c2.FileList(), want.FileList()) {
					t.Fatalf("through the cache: %s %v %v, the full read: %s %v %v", c2.Digest, c2.Shared, c2.LinksOut, want.Digest, want.Shared, want.LinksOut)
				}
				// And once more: the cache written by the full read serves
				// the next check fast.
				third := openDigestCache(cache, later.Add(5*time.Second))
				c3, err := readContentCached(dir, third)
				if err != nil || !third.fasted || c3.Digest != want.Digest {
					t.Fatalf("the check after: fast %v, digest %s (want %s), %v", third.fasted, c3.Digest, want.Digest, err)
				}
			})
		}
	}
}

// fastCheckCase is one change between two checks of a cached tree, and
// whether the second may be the fast one.
type fastCheckCase struct {
	name    string
	firstAt time.Duration // after the tree is made
	change  func(t *testing.T, dir, cache string)
	fast    bool // the second check is the fast one
	same    bool // and its digest is the first's
}

// fastCheckCases are TestFastCheck's changes: to what the digest covers,
// to the folders' names, and to the cache. outside is a folder out of the
// tree for what is moved or linked out of it.
func fastCheckCases(outside string) []fastCheckCase {
	// When the walk that writes the cache starts: well after the files'
	// last change, or with them (racy).
	const (
		settled = 5 * time.Second
		now     = 0
	)
	return []fastCheckCase{
		{name: "unchanged", firstAt: settled, change: func(*testing.T, string, string) {}, fast: true, same: true},
		{name: "rewritten in place, mtime set back", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "node_modules/p/lib/index.js")
			fi := stat(t, p)
			writeFile(t, p, "module.exports = 2\n")
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a file made in a folder", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, "node_modules/p/lib/new.js"), "x")
		}},
		{name: "an empty folder made", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			if err := os.Mkdir(filepath.Join(dir, "node_modules/p/lib/empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, same: true}, // folders are not in the digest, but the names in them are
		{name: "a file made in an empty folder", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, "node_modules/q/empty/x.js"), "x")
		}},
		{name: "a file removed", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			if err := os.Remove(filepath.Join(dir, "tools/run.sh")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a folder replaced by a link to a copy", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "node_modules/p")
			copyDir := filepath.Join(outside, fmt.Sprint(time.Now().UnixNano()))
			if err := os.Rename(p, copyDir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(copyDir, p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a hard link made from outside", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			if err := os.Link(filepath.Join(dir, "tools/run.sh"), filepath.Join(outside, fmt.Sprint(time.Now().UnixNano()))); err != nil {
				t.Fatal(err)
			}
		}, same: true},
		{name: "the settings file made at the top", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, ".env"), "K=v")
		}, same: true},
		{name: "racy cache", firstAt: now, change: func(*testing.T, string, string) {}, same: true},
		{name: "records missing", firstAt: settled, change: func(t *testing.T, _ string, cache string) {
			// Cut at the last record's start, the count kept.
			_, _, recs, err := readDigestCache(cache)
			if err != nil {
				t.Fatal(err)
			}
			last := recs[len(recs)-1]
			data, err := os.ReadFile(cache)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, cache, string(data[:len(data)-cacheRecordFixed-len(last.rel)-len(last.target)]))
		}, same: true},
	}
}

// fastCheckTree makes TestFastCheck's tree: a small node_modules with a
// link out, a file with another name and an empty folder, and when big
// enough records that several workers check them.
func fastCheckTree(t *testing.T, big bool) string {
	dir := t.TempDir()
	tree := map[string]string{
		ManifestFile: `{"name":"f","version":"1.0.0"}`, "tools/run.sh": "echo\n",
		"node_modules/p/lib/index.js": "module.exports = 1\n", "node_modules/p/package.json": "{}",
		"node_modules/p-q/index.js": "x", "node_modules/p.js": "y",
		"node_modules/.bin/p": "->../p/lib/index.js", "link-out": "->/etc/passwd",
	}
	if big {
		// Past the records that one worker checks alone.
		for i := range 2100 {
			tree[fmt.Sprintf("node_modules/m%02d/lib/f%03d.js", i/100, i%100)] = fmt.Sprint(i)
		}
	}
	writeTree(t, dir, tree)
	if err := os.MkdirAll(filepath.Join(dir, "node_modules/q/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "node_modules/p/package.json"), filepath.Join(dir, "node_modules/p/package2.json")); err != nil {
		t.Fatal(err)
	}
	return dir
}
