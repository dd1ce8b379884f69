package extension

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// The cache also records each folder's stat, every other entry, and the
// digest the walk found, for the fast check (digestfast.go), which
// takes that digest when no stat has changed, with no folder listed.
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
	digestCacheHeader = "gemkit digest cache 3"
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

// cacheEntry is an entry's statKey, by its slash path ("." for the
// folder itself), and for a regular file the SHA-256 of its content
// then, for a link its target.
type cacheEntry struct {
	rel    string
	key    statKey
	sum    []byte
	target string
}

// isDir and isRegular say what kind of entry e recorded.
func (e *cacheEntry) isDir() bool     { return fs.FileMode(e.key.Mode).IsDir() }
func (e *cacheEntry) isRegular() bool { return fs.FileMode(e.key.Mode).IsRegular() }

// digestCache is the cache of one extension folder during one walk: the
// entries read from its file (old, in record order), written at written
// by a walk that found the digest digest, and those of this walk
// (next), which started at started.
type digestCache struct {
	path string
	// exists: the file was there when the walk began; read is closed
	// once written and old are set, from the file read while the folder
	// is listed.
	exists  bool
	size    int64 // the file's
	read    chan struct{}
	written int64 // nanoseconds since the epoch; 0 when there was no cache
	digest  string
	old     []cacheEntry
	started int64
	next    []cacheEntry
	// nextDigest is the digest of this walk, which wrote next.
	nextDigest string
	changed    bool         // next is to be written
	hits       atomic.Int64 // files whose sum was reused
	fasted     bool         // the fast check took the recorded digest
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
		written, digest, old, err := readDigestCache(path)
		if err == nil {
			c.written, c.digest, c.old = written, digest, old
		}
	}()
	return c
}

// The cache file: its header line; the moment it was written (decimal
// nanoseconds), the digest its walk found and how many records follow,
// on a line; then one record per entry the digest covers, the folders
// included (the folder itself first, as "."), in record order
// (recordKey): device, inode, size, mode, mtime and ctime, the sum (zero
// but for a regular file), the lengths of the path and of a link's
// target, the path and the target, the numbers little-endian. A start
// reads it whole (25,000 files make some 3 MB), so it is decoded from
// one buffer: the paths cut from one string and the sums from the
// buffer itself. The count makes a file cut short at a record's end
// damaged, not a smaller tree: the fast check (digestfast.go) takes the
// records as the whole of the folder.
const cacheRecordFixed = 8 + 8 + 8 + 4 + 8 + 8 + sha256.Size + 2 + 2

// readDigestCache parses the cache file path.
func readDigestCache(path string) (written int64, digest string, entries []cacheEntry, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", nil, err
	}
	if fi.Size() > maxDigestCacheSize {
		return 0, "", nil, errors.New("too large")
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return 0, "", nil, err
	}
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(header) != digestCacheHeader {
		return 0, "", nil, errors.New("not a digest cache")
	}
	line, rest, ok := bytes.Cut(rest, []byte("\n"))
	fields := strings.Fields(string(line))
	if !ok || len(fields) != 3 || !strings.HasPrefix(fields[1], "sha256:") {
		return 0, "", nil, errors.New("no time of writing, digest and count")
	}
	written, err = parseInt(fields[0])
	count, cerr := parseInt(fields[2])
	if err != nil || cerr != nil || count < 0 || count > maxContentFiles+maxContentFiles/2 {
		return 0, "", nil, errors.New("a bad time of writing or count")
	}
	// Each path is a substring of rest, which nothing writes again.
	paths := unsafe.String(unsafe.SliceData(rest), len(rest))
	entries = make([]cacheEntry, 0, count)
	le := binary.LittleEndian
	lastFile := ""
	for off := 0; off < len(rest); {
		if len(rest)-off < cacheRecordFixed {
			return 0, "", nil, errors.New("a truncated record")
		}
		b := rest[off:]
		n := int(le.Uint16(b[cacheRecordFixed-4:]))
		tn := int(le.Uint16(b[cacheRecordFixed-2:]))
		if n == 0 || len(b) < cacheRecordFixed+n+tn {
			return 0, "", nil, errors.New("a truncated record")
		}
		at := off + cacheRecordFixed
		e := cacheEntry{
			key: statKey{Dev: le.Uint64(b), Ino: le.Uint64(b[8:]), Size: int64(le.Uint64(b[16:])), Mode: le.Uint32(b[24:]),
				Mtime: int64(le.Uint64(b[28:])), Ctime: int64(le.Uint64(b[36:]))},
			rel:    paths[at : at+n],
			target: paths[at+n : at+n+tn],
		}
		if e.isRegular() {
			e.sum = b[44 : 44+sha256.Size : 44+sha256.Size]
		}
		// The entries other than folders are in path order, which the
		// full walk's match of its listing against them relies on.
		if !e.isDir() {
			if lastFile != "" && lastFile >= e.rel {
				return 0, "", nil, errors.New("entries out of order")
			}
			lastFile = e.rel
		}
		entries = append(entries, e)
		off = at + n + tn
	}
	if int64(len(entries)) != count {
		return 0, "", nil, errors.New("records missing")
	}
	return written, fields[1], entries, nil
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

// record records the entry rel, of stat st (and for a regular file
// content sum, for a link target), for the cache this walk writes.
func (c *digestCache) record(rel string, st *fsutil.ScanStat, sum []byte, target string) {
	if k, ok := statKeyOf(st); ok {
		c.next = append(c.next, cacheEntry{rel: rel, key: k, sum: sum, target: target})
	}
}

// recordKey is what orders a record: the folder itself first (""), a
// folder at its path followed by "/", where the paths of what it holds
// begin, so that every folder's subtree is one run of records, any
// other entry at its path. The entries other than folders are then in
// path order.
func recordKey(e *cacheEntry) string {
	switch {
	case e.rel == "." && e.isDir():
		return ""
	case e.isDir():
		return e.rel + "/"
	}
	return e.rel
}

// save writes the entries of a walk that completed, with its digest.
// Failing to write is not an error: the next walk hashes more.
func (c *digestCache) save() {
	if c == nil || !c.changed || c.nextDigest == "" {
		return
	}
	keys := make([]string, len(c.next))
	order := make([]int, len(c.next))
	for i := range c.next {
		keys[i], order[i] = recordKey(&c.next[i]), i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d %s %d\n", digestCacheHeader, c.started, c.nextDigest, len(c.next))
	le := binary.LittleEndian
	var rec [cacheRecordFixed]byte
	for _, i := range order {
		e := &c.next[i]
		k := e.key
		if len(e.rel) == 0 || len(e.rel) > 0xffff || len(e.target) > 0xffff || e.isRegular() != (len(e.sum) == sha256.Size) {
			return
		}
		clear(rec[:])
		le.PutUint64(rec[0:], k.Dev)
		le.PutUint64(rec[8:], k.Ino)
		le.PutUint64(rec[16:], uint64(k.Size))
		le.PutUint32(rec[24:], k.Mode)
		le.PutUint64(rec[28:], uint64(k.Mtime))
		le.PutUint64(rec[36:], uint64(k.Ctime))
		copy(rec[44:], e.sum)
		le.PutUint16(rec[cacheRecordFixed-4:], uint16(len(e.rel)))
		le.PutUint16(rec[cacheRecordFixed-2:], uint16(len(e.target)))
		b.Write(rec[:])
		b.WriteString(e.rel)
		b.WriteString(e.target)
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
