//go:build linux

package extension

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDigestCache: the digest read through a warm cache is the one read
// without, and every way of changing a file's bytes that keeps its size
// (in place with its mtime set back, by rename, or within the racy
// window of the cache's writing) is seen; a damaged cache is ignored.
func TestDigestCache(t *testing.T) {
	now := time.Now()
	later := now.Add(10 * time.Second)
	for _, tc := range digestCacheCases(now) {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ManifestFile), "{}")
			writeFile(t, filepath.Join(dir, "tools/t.sh"), "echo hello\n")
			writeFile(t, filepath.Join(dir, "lib/a.js"), "module.exports = 1\n")
			os.Symlink("a.js", filepath.Join(dir, "lib/b.js"))
			cache := filepath.Join(t.TempDir(), "state", digestCacheDir, "c")

			first := readCached(t, dir, cache, tc.firstAt)
			if want := readFull(t, dir); first.c.Digest != want.Digest {
				t.Fatalf("a cold cache gave digest %s, without one %s", first.c.Digest, want.Digest)
			}
			fi := stat(t, cache)
			if fi.Mode().Perm() != 0o600 || stat(t, filepath.Dir(cache)).Mode().Perm() != 0o700 {
				t.Fatalf("cache %v, its folder %v; want 0600 in 0700", fi.Mode(), stat(t, filepath.Dir(cache)).Mode())
			}
			tc.change(t, dir, cache)
			second := readCached(t, dir, cache, later)
			want := readFull(t, dir)
			switch {
			case tc.name == "settled entry trusted":
				if second.c.Digest == want.Digest {
					t.Fatal("the forged sums were not used")
				}
			case second.c.Digest != want.Digest:
				t.Fatalf("through the cache: %s, without: %s", second.c.Digest, want.Digest)
			}
			if (second.c.Digest == first.c.Digest) != tc.same {
				t.Fatalf("digest kept = %v, want %v", !tc.same, tc.same)
			}
			if tc.hits >= 0 && second.hits != tc.hits {
				t.Fatalf("%d files taken from the cache, want %d", second.hits, tc.hits)
			}
		})
	}
}

// digestCacheCase is one change between two walks through the digest
// cache, and what the second walk may take from it.
type digestCacheCase struct {
	name string
	// firstAt is when the walk that writes the cache starts.
	firstAt time.Time
	// change alters the folder (or the cache) between the walks.
	change func(t *testing.T, dir, cache string)
	// hits is how many files the second walk may take from the
	// cache; -1 for any number.
	hits int
	// same: the second digest equals the first.
	same bool
}

// digestCacheCases are TestDigestCache's changes: the folder's files
// rewritten behind the cache's back, and the cache itself forged or damaged. now is when the files were written.
func digestCacheCases(now time.Time) []digestCacheCase {
	settled := now.Add(5 * time.Second) // a walk well after the files' last change
	return []digestCacheCase{
		{name: "unchanged", firstAt: settled, change: func(*testing.T, string, string) {}, hits: 3, same: true},
		{name: "rewritten in place, mtime set back", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "tools/t.sh")
			fi := stat(t, p)
			writeFile(t, p, "echo PLANT\n")
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, hits: 2},
		{name: "replaced by rename", firstAt: settled, change: func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "tools/t.sh")
			fi := stat(t, p)
			tmp := filepath.Join(dir, "tools/.t.sh.tmp")
			writeFile(t, tmp, "echo PLANT\n")
			os.Chmod(tmp, fi.Mode())
			if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, hits: 2},
		{name: "racy entry rehashed", firstAt: now, change: func(t *testing.T, _ string, cache string) {
			// A stale sum for a file whose stat matches: what a write
			// within the timestamp granularity of the cache's writing
			// would leave. The cache was written in the same second as
			// the files, so its entries are racy and not trusted.
			forgeCacheSums(t, cache)
		}, hits: 0, same: true},
		{name: "settled entry trusted", firstAt: settled, change: func(t *testing.T, _ string, cache string) {
			// The same stale sums in a cache written well after the
			// files' last change are taken as they are: what makes the
			// racy case above mean something.
			forgeCacheSums(t, cache)
		}, hits: 3},
		{name: "damaged cache", firstAt: settled, change: func(t *testing.T, _ string, cache string) {
			writeFile(t, cache, digestCacheHeader+"\n12\n1 2 3 4 5 6 zz \"x\"\n")
		}, hits: 0, same: true},
		{name: "truncated cache", firstAt: settled, change: func(t *testing.T, _ string, cache string) {
			data, err := os.ReadFile(cache)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, cache, string(data[:len(data)-20]))
		}, hits: 0, same: true},
		{name: "other version", firstAt: settled, change: func(t *testing.T, _ string, cache string) {
			writeFile(t, cache, "gemkit digest cache 0\n")
		}, hits: 0, same: true},
	}
}

// TestStoreReadContentCache: the store keeps one cache file per folder,
// 0600, in its state folder, and the digest through it is ReadContent's.
func TestStoreReadContentCache(t *testing.T) {
	home := t.TempDir()
	s := OpenStore(home)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ManifestFile), "{}")
	writeFile(t, filepath.Join(dir, "tools/t.sh"), "echo hi\n")
	for range 2 {
		got, err := s.ReadContent(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := readFull(t, dir); got.Digest != want.Digest {
			t.Fatalf("store digest %s, ReadContent %s", got.Digest, want.Digest)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	fi := stat(t, digestCachePath(s.stateDir(), real))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode %v, want 0600", fi.Mode())
	}
}

type cachedRead struct {
	c    Content
	hits int
}

func readCached(t *testing.T, dir, cache string, at time.Time) cachedRead {
	t.Helper()
	dc := openDigestCache(cache, at)
	c, err := readContentCached(dir, dc)
	if err != nil {
		t.Fatal(err)
	}
	return cachedRead{c: c, hits: int(dc.hits.Load())}
}

func readFull(t *testing.T, dir string) Content {
	t.Helper()
	c, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forgeCacheSums rewrites every sum of the cache file and the digest it
// recorded, keeping its entries' stat and the moment it was written.
func forgeCacheSums(t *testing.T, cache string) {
	t.Helper()
	written, _, old, err := readDigestCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	c := &digestCache{path: cache, started: written, changed: true, nextDigest: "sha256:" + strings.Repeat("ab", 32)}
	for _, e := range old {
		if e.isRegular() {
			e.sum = bytes.Repeat([]byte{0xab}, 32)
		}
		c.next = append(c.next, e)
	}
	c.save()
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func stat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestUninstallForgetsDigestCache: removing an extension removes the
// digest cache of its folder with its consent.
func TestUninstallForgetsDigestCache(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "cached")
	in, err := s.Get("cached")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(in.Extension); err != nil {
		t.Fatal(err)
	}
	cache := s.digestCacheOf(in.Extension.Dir)
	stat(t, cache)
	if err := s.Uninstall("cached"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("the digest cache outlived the extension: %v", err)
	}
}

// TestDigestCacheNames: entries are found again whatever their paths
// hold (spaces, quotes, backslashes, a newline, bytes that are not
// UTF-8).
func TestDigestCacheNames(t *testing.T) {
	dir := t.TempDir()
	names := []string{ManifestFile, "a b.js", `q"uote.js`, `back\slash.js`, "new\nline.js", "é.js", "bad\xff.js"}
	for _, n := range names {
		writeFile(t, filepath.Join(dir, n), n)
	}
	cache := filepath.Join(t.TempDir(), digestCacheDir, "c")
	first := readCached(t, dir, cache, time.Now().Add(5*time.Second))
	second := readCached(t, dir, cache, time.Now().Add(10*time.Second))
	if second.hits != len(names) || second.c.Digest != first.c.Digest || first.c.Digest != readFull(t, dir).Digest {
		t.Fatalf("%d of %d files from the cache; digests %s, %s", second.hits, len(names), first.c.Digest, second.c.Digest)
	}
}

// TestDigestUnchanged: the digest ReadContent takes is the one gemkit
// always took (the records of every person's consent hold it): each
// file's quoted path and octal mode, then a link's quoted target after
// "-> " or a regular file's SHA-256, in path order, .git, .env and the
// install metadata at the top left out; here computed the plain way,
// beside the scan through the Root, with and without the digest cache,
// for files, folders, links in and out, modes and names to quote.
func TestDigestUnchanged(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		ManifestFile: `{"name":"d","version":"1.0.0"}`, "tools/run.sh": "echo\n", "a b/c\"d.js": "x",
		"node_modules/p/index.js": "module.exports = 1\n", "node_modules/p/package.json": "{}",
		".env": "SECRET=1", ".git/config": "[core]", InstallMetadataFile: "{}", "sub/.env": "kept",
		"link-in": "->tools/run.sh", "link-out": "->/etc/passwd", "é.txt": "\xff",
	})
	os.Chmod(filepath.Join(dir, "tools", "run.sh"), 0o755)
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == ".git":
			return fs.SkipDir
		case d.IsDir(), rel == ".env", rel == InstallMetadataFile:
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := strconv.Quote(rel) + " " + strconv.FormatUint(uint64(fi.Mode()), 8) + "\n"
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += "-> " + strconv.Quote(target) + "\n"
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			line += hex.EncodeToString(sum[:]) + "\n"
		}
		lines = append(lines, rel+"\x00"+line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		_, line, _ := strings.Cut(l, "\x00")
		h.Write([]byte(line))
	}
	want := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if got := readFull(t, dir).Digest; got != want {
		t.Errorf("ReadContent: %s, want %s", got, want)
	}
	cache := filepath.Join(t.TempDir(), digestCacheDir, "c")
	for _, at := range []time.Time{time.Now().Add(5 * time.Second), time.Now().Add(10 * time.Second)} {
		if got := readCached(t, dir, cache, at).c.Digest; got != want {
			t.Errorf("through the digest cache: %s, want %s", got, want)
		}
	}
}
