package extension

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// The digest cache spares ReadContent the hashing of files that have not
// changed since the last walk of the same folder, as git's index spares
// `git status` the reading of unchanged files. Consent is checked at
// every tool run and at every start of an extension's MCP server, and an
// extension that ships its server with node_modules holds thousands of
// files: hashing them all again each time cost a server's cold start
// more than a hundred milliseconds.
//
// The cache holds, per file of the folder (by slash path), the fstat of
// the descriptor its content was read from (device, inode, size, mode,
// mtime and ctime, both in nanoseconds) and the SHA-256 of that content.
// A later walk stats every file beneath the folder it was listed in,
// held open (fstatat, no link followed), and reuses the recorded sum only
// when that stat matches the entry on all six fields; anything else is
// opened, read and hashed, and its descriptor's fstat recorded. What the
// walk covers and how the digest is made do not change: the digest is
// the same bytes with or without a cache, only the reading is skipped.
//
// Why the stat is enough. A program that rewrites a file in place
// changes its mtime and its ctime; it can set the mtime back (utimes),
// but doing so sets the ctime to the present, and no unprivileged
// process can set a ctime. A file replaced by another (a rename, a
// delete and a create) has another inode, or, if the inode is reused,
// a ctime of its making. So a file whose device, inode, size, mode,
// mtime and ctime all match has not been written since it was hashed -
// provided its timestamps were already in the past when it was hashed.
// A write landing within the timestamp granularity of the one before it
// (a coarse filesystem clock, a second on some filesystems) may leave
// both times as they were; git calls such entries racy. As git does, an
// entry is trusted only when its mtime and its ctime are older than the
// moment the cache was written minus RacyWindow; a younger one is hashed
// again each time, until a later walk writes the cache anew. The moment
// recorded is when the walk that wrote the cache started, before any
// file of it was looked at, so that a file changed while a long walk ran
// is never taken for one that had settled.
//
// Where it lives. One file per extension folder in gemkit's own state
// folder (~/.gemini/gemkit/digests, made 0700, the file 0600, written
// atomically), named by the SHA-256 of the folder's real path. That
// folder is closed to every sandboxed tool and server (~/.gemini is, as
// docs/sandbox.md says), so forging an entry, the one way to make a
// changed file pass for its old self, takes writing there, which only
// the person's own programs can, and those can already rewrite the
// consent records beside it. A cache that cannot be read, is damaged, or
// is for another version is ignored: the folder is hashed in full, as
// without a cache. One that would be larger than maxDigestCacheSize is
// not written. Uninstall removes the cache of the folder it removes.
//
// The racy window assumes the files' timestamps and time.Now come from
// the same clock, give or take its granularity; a network filesystem
// whose server's clock runs more than the window behind this machine's
// would weaken it, as it weakens git's.
const (
	digestCacheDir     = "digests"
	digestCacheHeader  = "gemkit digest cache 1"
	maxDigestCacheSize = 16 << 20
)

// RacyWindow is how much older than the cache's walk a file's
// timestamps must be for its cached sum to be trusted.
const RacyWindow = 2 * time.Second

// statKey is what the digest cache compares of a file: its descriptor's
// fstat as statKeyOf reads it.
type statKey struct {
	Dev, Ino     uint64
	Size         int64
	Mode         uint32
	Mtime, Ctime int64 // nanoseconds since the epoch
}

// cacheEntry is a file's statKey and the SHA-256 of its content then,
// by its slash path.
type cacheEntry struct {
	rel string
	key statKey
	sum []byte
}

// digestCache is the cache of one extension folder during one walk: the
// entries read from its file (old, sorted by path), written at written,
// and those of this walk (next, in the walk's order), which started at
// started.
type digestCache struct {
	path    string
	written int64 // nanoseconds since the epoch; 0 when there was no cache
	old     []cacheEntry
	started int64
	next    []cacheEntry
	changed bool // next differs from old, or holds racy entries
	hits    int  // files whose sum was reused
}

// digestCachePath is the cache file of the folder whose real path is
// real, in the state folder state.
func digestCachePath(state, real string) string {
	h := sha256.Sum256([]byte(real))
	return filepath.Join(state, digestCacheDir, hex.EncodeToString(h[:16]))
}

// openDigestCache reads the cache file path for a walk starting now; a
// missing, unreadable or damaged file gives an empty cache.
func openDigestCache(path string, now time.Time) *digestCache {
	c := &digestCache{path: path, started: now.UnixNano()}
	written, old, err := readDigestCache(path)
	if err == nil {
		c.written, c.old = written, old
	}
	c.next = make([]cacheEntry, 0, len(c.old))
	return c
}

// readDigestCache parses the cache file path: its header, the moment it
// was written and its entries, one a line, sorted by path:
// "dev ino size mode mtime ctime sum "path"". A start reads it whole
// (a node_modules makes it most of a megabyte), so the paths are cut
// from one string and the sums from one slab, not allocated one by one.
func readDigestCache(path string) (int64, []cacheEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDigestCacheSize+1))
	if err != nil {
		return 0, nil, err
	}
	if len(data) > maxDigestCacheSize {
		return 0, nil, errors.New("too large")
	}
	text := string(data)
	header, rest, ok := strings.Cut(text, "\n")
	if !ok || header != digestCacheHeader {
		return 0, nil, errors.New("not a digest cache")
	}
	line, rest, ok := strings.Cut(rest, "\n")
	written, err := parseInt(line)
	if !ok || err != nil {
		return 0, nil, errors.New("no time of writing")
	}
	n := strings.Count(rest, "\n")
	entries := make([]cacheEntry, n)
	sums := make([]byte, n*sha256.Size)
	for i := range entries {
		if line, rest, ok = strings.Cut(rest, "\n"); !ok {
			return 0, nil, errors.New("unterminated line")
		}
		e, err := parseCacheLine(line, sums[i*sha256.Size:(i+1)*sha256.Size:(i+1)*sha256.Size])
		if err != nil {
			return 0, nil, err
		}
		if i > 0 && entries[i-1].rel >= e.rel {
			return 0, nil, errors.New("entries out of order")
		}
		entries[i] = e
	}
	if rest != "" {
		return 0, nil, errors.New("unterminated line")
	}
	return written, entries, nil
}

// parseCacheLine parses one entry of the cache file, decoding its sum
// into sum (sha256.Size bytes).
func parseCacheLine(line string, sum []byte) (cacheEntry, error) {
	var nums [6]int64
	for i := range nums {
		field, after, ok := strings.Cut(line, " ")
		n, err := parseInt(field)
		if !ok || err != nil {
			return cacheEntry{}, errors.New("bad number")
		}
		nums[i], line = n, after
	}
	field, quoted, ok := strings.Cut(line, " ")
	if !ok || hex.DecodedLen(len(field)) != sha256.Size {
		return cacheEntry{}, errors.New("bad sum")
	}
	if _, err := hex.Decode(sum, []byte(field)); err != nil {
		return cacheEntry{}, err
	}
	rel, err := unquotePath(quoted)
	if err != nil {
		return cacheEntry{}, err
	}
	k := statKey{Dev: uint64(nums[0]), Ino: uint64(nums[1]), Size: nums[2], Mode: uint32(nums[3]), Mtime: nums[4], Ctime: nums[5]}
	return cacheEntry{rel: rel, key: k, sum: sum}, nil
}

// unquotePath reads a path as %q wrote it; one without escapes (nearly
// every path) is taken as it is, sparing strconv.Unquote's work.
func unquotePath(q string) (string, error) {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' {
		inner := q[1 : len(q)-1]
		if strings.IndexByte(inner, '\\') < 0 && strings.IndexByte(inner, '"') < 0 && utf8.ValidString(inner) {
			return inner, nil
		}
	}
	return strconv.Unquote(q)
}

// parseInt parses a decimal int64, sign allowed, from b.
func parseInt(b string) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, errors.New("bad number")
	}
	var n uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, errors.New("bad number")
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, errors.New("bad number")
		}
		return -int64(n), nil
	}
	if n > 1<<63-1 {
		return 0, errors.New("bad number")
	}
	return int64(n), nil
}

// lookup is the entry of old for rel.
func (c *digestCache) lookup(rel string) (cacheEntry, bool) {
	i, ok := slices.BinarySearchFunc(c.old, rel, func(e cacheEntry, rel string) int { return strings.Compare(e.rel, rel) })
	if !ok {
		return cacheEntry{}, false
	}
	return c.old[i], true
}

// sum is the recorded SHA-256 of the file rel whose stat is fi, when its
// entry matches fi and is not racy; nil otherwise. A nil cache has no
// entries.
func (c *digestCache) sum(rel string, fi fs.FileInfo) []byte {
	if c == nil {
		return nil
	}
	k, ok := statKeyOf(fi)
	if !ok {
		return nil
	}
	e, ok := c.lookup(rel)
	if !ok || e.key != k || racy(k, c.written) {
		return nil
	}
	c.hits++
	return e.sum
}

// racy says whether an entry of key, in a cache written at written,
// cannot be trusted: a change within the timestamp granularity of its
// last one may have left its times as they were.
func racy(k statKey, written int64) bool {
	limit := written - int64(RacyWindow)
	return k.Mtime >= limit || k.Ctime >= limit
}

// put records the file rel, of stat fi and content sum, for the cache
// this walk writes.
func (c *digestCache) put(rel string, fi fs.FileInfo, sum []byte) {
	if c == nil {
		return
	}
	k, ok := statKeyOf(fi)
	if !ok {
		return
	}
	if !c.changed {
		if was, ok := c.lookup(rel); !ok || was.key != k || !bytes.Equal(was.sum, sum) || racy(k, c.written) {
			c.changed = true
		}
	}
	c.next = append(c.next, cacheEntry{rel: rel, key: k, sum: sum})
}

// save writes the entries of a walk that completed, when they differ
// from those read (or some were racy, which a cache written now may
// settle). Failing to write is not an error: the next walk hashes more.
func (c *digestCache) save() {
	if c == nil || (!c.changed && len(c.next) == len(c.old)) {
		return
	}
	slices.SortFunc(c.next, func(a, b cacheEntry) int { return strings.Compare(a.rel, b.rel) })
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n", digestCacheHeader, c.started)
	for _, e := range c.next {
		k := e.key
		fmt.Fprintf(&b, "%d %d %d %d %d %d %x %q\n", int64(k.Dev), int64(k.Ino), k.Size, k.Mode, k.Mtime, k.Ctime, e.sum, e.rel)
		if b.Len() > maxDigestCacheSize {
			return
		}
	}
	// The state folder and its digests folder, both 0700 when made here.
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(c.path, b.Bytes(), 0o600)
}

// ReadContent is ReadContent(dir) through the store's digest cache of
// that folder: the same Content, with the files unchanged since the
// last walk (by their stat) not read again. Consent checks, which run
// at every tool run and server start, read through it; a folder whose
// real path cannot be found is read without it.
func (s *Store) ReadContent(dir string) (Content, error) {
	cache := s.digestCacheOf(dir)
	if cache == "" {
		return ReadContent(dir)
	}
	return readContentCached(dir, openDigestCache(cache, time.Now()))
}

// digestCacheOf is the path of the digest cache of the extension folder
// dir, named by its real path; "" when that cannot be found.
func (s *Store) digestCacheOf(dir string) string {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	return digestCachePath(s.stateDir(), real)
}
