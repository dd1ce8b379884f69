package extension

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

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
// docs/sandbox-design.md says), so forging an entry, the one way to make a
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
	digestCacheDir    = "digests"
	digestCacheHeader = "gemkit digest cache 2"
	// maxDigestCacheSize bounds the file: the entries of maxContentFiles
	// files with paths of some 300 bytes.
	maxDigestCacheSize = 48 << 20
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
// entries read from its file (old, sorted by path), written at written, and those of this walk (next), which
// started at started.
type digestCache struct {
	path string
	// exists: the file was there when the walk began; read is closed
	// once written and old are set, from the file read while the folder
	// is listed.
	exists  bool
	size    int64 // the file's
	read    chan struct{}
	written int64 // nanoseconds since the epoch; 0 when there was no cache
	old     []cacheEntry
	started int64
	next    []cacheEntry
	changed bool         // next differs from old, or holds racy entries
	hits    atomic.Int64 // files whose sum was reused
}

// digestCachePath is the cache file of the folder whose real path is
// real, in the state folder state.
func digestCachePath(state, real string) string {
	h := sha256.Sum256([]byte(real))
	return filepath.Join(state, digestCacheDir, hex.EncodeToString(h[:16]))
}

// openDigestCache reads the cache file path for a walk starting now, in
// the background (entries waits for it); a missing, unreadable or
// damaged file gives an empty cache.
func openDigestCache(path string, now time.Time) *digestCache {
	c := &digestCache{path: path, started: now.UnixNano(), read: make(chan struct{})}
	fi, err := os.Stat(path)
	if err != nil {
		close(c.read)
		return c
	}
	c.exists, c.size = true, fi.Size()
	go func() {
		defer close(c.read)
		written, old, err := readDigestCache(path)
		if err == nil {
			c.written, c.old = written, old
		}
	}()
	return c
}

// The cache file: its header line, the moment it was written (decimal
// nanoseconds) on a line, then one record per file, sorted by path:
// device, inode, size, mode, mtime and ctime, the sum, the path's length
// and the path, the numbers little-endian. A start reads it whole (25,000
// files make some 3 MB), so it is decoded from one buffer: the paths cut
// from one string and the sums from the buffer itself.
const cacheRecordFixed = 8 + 8 + 8 + 4 + 8 + 8 + sha256.Size + 2

// readDigestCache parses the cache file path.
func readDigestCache(path string) (int64, []cacheEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	if fi.Size() > maxDigestCacheSize {
		return 0, nil, errors.New("too large")
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return 0, nil, err
	}
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(header) != digestCacheHeader {
		return 0, nil, errors.New("not a digest cache")
	}
	line, rest, ok := bytes.Cut(rest, []byte("\n"))
	written, err := parseInt(string(line))
	if !ok || err != nil {
		return 0, nil, errors.New("no time of writing")
	}
	// Each path is a substring of rest, which nothing writes again.
	paths := unsafe.String(unsafe.SliceData(rest), len(rest))
	var entries []cacheEntry
	le := binary.LittleEndian
	for off := 0; off < len(rest); {
		if len(rest)-off < cacheRecordFixed {
			return 0, nil, errors.New("a truncated record")
		}
		b := rest[off:]
		n := int(le.Uint16(b[cacheRecordFixed-2:]))
		if n == 0 || len(b) < cacheRecordFixed+n {
			return 0, nil, errors.New("a truncated record")
		}
		e := cacheEntry{
			key: statKey{Dev: le.Uint64(b), Ino: le.Uint64(b[8:]), Size: int64(le.Uint64(b[16:])), Mode: le.Uint32(b[24:]),
				Mtime: int64(le.Uint64(b[28:])), Ctime: int64(le.Uint64(b[36:]))},
			sum: b[44 : 44+sha256.Size : 44+sha256.Size],
			rel: paths[off+cacheRecordFixed : off+cacheRecordFixed+n],
		}
		if len(entries) > 0 && entries[len(entries)-1].rel >= e.rel {
			return 0, nil, errors.New("entries out of order")
		}
		entries = append(entries, e)
		off += cacheRecordFixed + n
	}
	return written, entries, nil
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

// present says whether the cache file was there when the walk began.
func (c *digestCache) present() bool { return c != nil && c.exists }

// guess is about how many files the cache holds, from its size alone.
func (c *digestCache) guess() int {
	if c == nil {
		return 0
	}
	return int(min(c.size, maxDigestCacheSize) / (cacheRecordFixed + 24))
}

// entries are the entries the cache read, in path order, once read.
func (c *digestCache) entries() []cacheEntry {
	if c == nil {
		return nil
	}
	<-c.read
	return c.old
}

// match is the recorded SHA-256 of e's file, whose stat is now st, when
// e matches st and is not racy; nil otherwise.
func (c *digestCache) match(e cacheEntry, st *fsutil.ScanStat) []byte {
	k, ok := statKeyOf(st)
	if !ok || e.key != k || racy(k, c.written) {
		return nil
	}
	c.hits.Add(1)
	return e.sum
}

// racy says whether an entry of key, in a cache written at written,
// cannot be trusted: a change within the timestamp granularity of its
// last one may have left its times as they were.
func racy(k statKey, written int64) bool {
	limit := written - int64(RacyWindow)
	return k.Mtime >= limit || k.Ctime >= limit
}

// put records the file rel, of stat st and content sum, for the cache
// this walk writes (once it found the files changed, or racy, since the
// cache was written).
func (c *digestCache) put(rel string, st *fsutil.ScanStat, sum []byte) {
	if k, ok := statKeyOf(st); ok {
		c.next = append(c.next, cacheEntry{rel: rel, key: k, sum: sum})
	}
}

// save writes the entries of a walk that completed, when they differ
// from those read (or some were racy, which a cache written now may
// settle). Failing to write is not an error: the next walk hashes more.
func (c *digestCache) save() {
	if c == nil || !c.changed {
		return
	}
	slices.SortFunc(c.next, func(a, b cacheEntry) int { return strings.Compare(a.rel, b.rel) })
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n", digestCacheHeader, c.started)
	le := binary.LittleEndian
	var rec [cacheRecordFixed]byte
	for _, e := range c.next {
		k := e.key
		if len(e.rel) == 0 || len(e.rel) > 0xffff || len(e.sum) != sha256.Size {
			return
		}
		le.PutUint64(rec[0:], k.Dev)
		le.PutUint64(rec[8:], k.Ino)
		le.PutUint64(rec[16:], uint64(k.Size))
		le.PutUint32(rec[24:], k.Mode)
		le.PutUint64(rec[28:], uint64(k.Mtime))
		le.PutUint64(rec[36:], uint64(k.Ctime))
		copy(rec[44:], e.sum)
		le.PutUint16(rec[cacheRecordFixed-2:], uint16(len(e.rel)))
		b.Write(rec[:])
		b.WriteString(e.rel)
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
