package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Bounds of ContentDigest: an extension folder past them is not one whose
// code a person could have looked at, and hashing it on every run would
// cost too much.
const (
	maxContentFiles = 100000
	maxContentBytes = 2 << 30
)

// MaxContentFiles and MaxContentBytes are those bounds, for what writes
// a folder consent is to bind: internal/pkgrun holds an install to them
// while npm writes.
const (
	MaxContentFiles = maxContentFiles
	MaxContentBytes = maxContentBytes
)

// Content is an extension folder's files as consent binds to them.
type Content struct {
	// Digest is the folder's ContentDigest, the one value consent is
	// checked against.
	Digest string
	// Files maps every file's slash path, relative to the folder, to its
	// mode and the SHA-256 of its content (of its target, for a symlink):
	// "-rwxr-xr-x 9f86d0…". It adds nothing to what Digest binds; it is
	// kept so that a digest that no longer matches can be explained by
	// naming the files that changed. nil for a record older than it.
	// Read it through FileList: it is made, or read from the record,
	// only when asked for.
	Files map[string]string
	// Shared are the regular files (slash paths) that have another name
	// than this one, a hard link (a build step's ln, pnpm's store): a
	// program that writes that other name changes the bytes that run,
	// after the person agreed, without touching the extension's folder.
	// Counted on the very descriptor the digest was read from. Not part
	// of a record.
	Shared []string
	// LinksOut are the symbolic links of the folder that lead out of it,
	// by slash path, with where they lead (an absolute path): what they
	// name is code or data the extension does not hold, which its folder
	// being read-only does not keep. Not part of a record.
	LinksOut map[string]string

	// loadFiles makes Files when asked for (FileList): from the walk of
	// a folder, or from where a consent record keeps it.
	loadFiles func() map[string]string
}

// FileList is Files, made from the walk that read the folder, or read
// from where the consent record keeps it for an agreed Content
// (Store.ConsentContent).
func (c Content) FileList() map[string]string {
	if c.Files == nil && c.loadFiles != nil {
		return c.loadFiles()
	}
	return c.Files
}

// ContentDigest hashes the files of an extension folder: every regular
// file's path, mode and content, and every symlink's target, in path
// order. Consent binds to it as well as to the permissions, so that code
// changed since the person agreed (a linked source edited, a tool script
// rewritten) is shown and asked about again. The settings file (.env),
// whose values the person sets, gemkit's install metadata and .git are
// left out.
func ContentDigest(dir string) (string, error) {
	c, err := ReadContent(dir)
	return c.Digest, err
}

// ReadContent reads the folder dir as consent binds to it: its
// ContentDigest and, from the same walk, the per-file list that names
// what changed when the digest no longer matches. The folder is read
// through an fsutil.Root, each file from a descriptor opened beneath the
// folder it was listed in, and the files that have another name or lead
// out of the folder are noted (Shared, LinksOut) for Bindable.
func ReadContent(dir string) (Content, error) {
	return readContentCached(dir, nil)
}

// readContentCached is ReadContent reusing the sums of cache (nil: none)
// for the files whose stat matches, and saving the walk's entries to it.
func readContentCached(dir string, cache *digestCache) (Content, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return Content{}, fmt.Errorf("hashing the extension's files in %s: %w", dir, err)
	}
	defer root.Close()
	// A tree the cache describes whole, unchanged by every stat, has the
	// digest it recorded: no folder listed, no file read.
	if c, ok := cache.fast(root); ok {
		return c, nil
	}
	c, err := readContent(root, cache)
	var tl *TooLargeError
	if errors.As(err, &tl) {
		tl.Dir = dir
		return Content{}, tl
	}
	if err != nil {
		return Content{}, fmt.Errorf("hashing the extension's files in %s: %w", dir, err)
	}
	cache.save()
	return c, nil
}

// contentFile is one file ContentDigest covers, hashed.
type contentFile struct {
	rel    string // slash path relative to the folder
	mode   fs.FileMode
	target string // a link's
	sum    []byte // the SHA-256 of its content or target; nil for other kinds
	st     fsutil.ScanStat
}

// contentWorkers is how many goroutines read an extension's folder at
// once: its listing and stat calls, not its hashing, dominate a consent
// check once the digest cache is warm, and they scale with the cores.
func contentWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

func readContent(root *fsutil.Root, cache *digestCache) (Content, error) {
	return readContentBounded(root, cache, maxContentFiles, maxContentBytes)
}

// readContentBounded is readContent with at most maxFiles files of at
// most maxBytes together.
func readContentBounded(root *fsutil.Root, cache *digestCache, maxFiles int, maxBytes int64) (Content, error) {
	w := &contentWalk{
		root: root, cache: cache, maxFiles: maxFiles, maxBytes: maxBytes,
		files:    make([]contentFile, cache.guess()+64),
		countCap: 2 * maxFiles,
		// Without a cache every file is hashed as it is listed, beneath
		// the folder held open; with one, the stat of each is compared
		// with the cache once the listing is done and sorted, and only
		// those that differ are hashed then.
		hashNow: !cache.present(),
	}
	if cache != nil {
		// The folder's stat before it is listed: a name made or removed
		// in it after this changes it, which the next check sees.
		// Without it (a system that cannot tell it) the cache has no
		// record of the folder, and the fast check is never taken.
		if st, err := rootStat(root); err == nil {
			w.dirs = append(w.dirs, contentFile{rel: ".", mode: st.Mode, st: st})
		}
	}
	err := root.Scan(contentWorkers(), w.visit)
	switch {
	case errors.Is(err, errCountCap):
		return Content{}, w.tooMany(true)
	case err != nil:
		return Content{}, err
	case w.over.Load():
		return Content{}, w.tooMany(false)
	}
	w.files = append(w.files[:min(int(w.count.Load()), len(w.files))], w.more...)
	order := sortedOrder(w.files)
	total, err := w.hashUncached(order)
	if err != nil {
		return Content{}, err
	}
	if total > maxBytes {
		return Content{}, &TooLargeError{Files: maxFiles, Bytes: maxBytes, Found: len(w.files), FoundBytes: total}
	}
	w.digest(order)
	w.recordCache()
	// The per-file list is made when asked for (FileList): a consent
	// check whose digest matches, the one at every start, needs none.
	files := w.files
	w.c.loadFiles = func() map[string]string {
		m := make(map[string]string, len(files))
		for _, f := range files {
			m[f.rel] = fileState(f.mode, f.sum)
		}
		return m
	}
	return w.c, nil
}

// contentWalk is what one readContentBounded holds while the folder is
// listed: the scan calls visit from several goroutines at once, so the
// state they share is kept here beside the lock and counters guarding it.
type contentWalk struct {
	root     *fsutil.Root
	cache    *digestCache
	maxFiles int
	maxBytes int64
	hashNow  bool

	files []contentFile
	dirs  []contentFile // for the cache: its folders, the folder first
	count atomic.Int64  // files seen: the first len(files) go to files
	sum   atomic.Int64  // their bytes
	mu    sync.Mutex    // guards more, dirs and c's lists
	more  []contentFile
	c     Content
	// over: a bound was passed; the files are counted on, neither
	// hashed nor kept, for the error to say how many there are, up to
	// countCap files (one past it, and the count says "at least").
	over     atomic.Bool
	countCap int
}

// tooMany is the error for a folder past the bounds, with what was
// counted of it so far.
func (w *contentWalk) tooMany(atLeast bool) error {
	return &TooLargeError{Files: w.maxFiles, Bytes: w.maxBytes, Found: int(w.count.Load()), FoundBytes: w.sum.Load(), AtLeast: atLeast}
}

// visit is the scan's callback for one entry: folders are noted for the
// cache, files read (a link's target, a regular file's sum when hashed
// now) and kept, until a bound is passed.
func (w *contentWalk) visit(dir *fsutil.ScanDir, rel string, st *fsutil.ScanStat) error {
	if st.Mode.IsDir() {
		if leftOutOfContent(rel, true) {
			return fs.SkipDir
		}
		if w.cache != nil {
			w.mu.Lock()
			w.dirs = append(w.dirs, contentFile{rel: rel, mode: st.Mode, st: *st})
			w.mu.Unlock()
		}
		return nil
	}
	if leftOutOfContent(rel, false) {
		return nil
	}
	f := contentFile{rel: rel, mode: st.Mode, st: *st}
	switch {
	case st.Mode&fs.ModeSymlink != 0:
		if err := w.readLink(dir, &f); err != nil {
			return err
		}
	case st.Mode.IsRegular() && w.hashNow && !w.over.Load():
		fst, sum, err := hashFile(dir.OpenStat, path.Base(rel), dir.Path(path.Base(rel)), w.maxBytes)
		if err != nil {
			return err
		}
		// The mode, the bytes counted and the stat cached are those of
		// the file hashed, not of the entry listed a moment before.
		f.st, f.mode, f.sum = fst, fst.Mode, sum
	}
	return w.keep(f)
}

// readLink fills in a symlink's target and its sum, and notes it in
// LinksOut when it leads out of the folder.
func (w *contentWalk) readLink(dir *fsutil.ScanDir, f *contentFile) error {
	target, err := dir.Readlink(path.Base(f.rel))
	if err != nil {
		return err
	}
	s := sha256.Sum256([]byte(target))
	f.target, f.sum = target, s[:]
	if dest, out := linkOut(w.root, f.rel, target); out {
		w.mu.Lock()
		if w.c.LinksOut == nil {
			w.c.LinksOut = map[string]string{}
		}
		w.c.LinksOut[f.rel] = dest
		w.mu.Unlock()
	}
	return nil
}

// keep counts f against the bounds and, within them, keeps it: into the
// slot of its own, without a lock while the guessed room lasts.
func (w *contentWalk) keep(f contentFile) error {
	n := int(w.count.Add(1))
	if f.mode.IsRegular() && w.sum.Add(f.st.Size) > w.maxBytes || n > w.maxFiles || w.over.Load() {
		w.over.Store(true)
		if n > w.countCap {
			return errCountCap
		}
		return nil
	}
	if n <= len(w.files) {
		w.files[n-1] = f
		return nil
	}
	w.mu.Lock()
	w.more = append(w.more, f)
	w.mu.Unlock()
	return nil
}

// hashUncached gives every regular file not hashed yet its sum, and
// returns the bytes of the files as hashed. A file whose stat, taken
// beneath the folder held open as it was listed, matches the digest
// cache's entry is not opened, let alone read (digestcache.go says why
// that is safe): at a server's start most of a node_modules is. The
// cache's entries are in path order too, so they are matched in one pass.
func (w *contentWalk) hashUncached(order []int32) (int64, error) {
	total := w.sum.Load()
	old := w.cache.entries()
	j := 0
	for _, i := range order {
		f := &w.files[i]
		if !f.mode.IsRegular() || f.sum != nil {
			continue
		}
		// The folders' records stand among the others at their paths
		// followed by "/" (recordKey), and are passed over.
		for j < len(old) && (old[j].isDir() || old[j].rel < f.rel) {
			j++
		}
		if j < len(old) && old[j].rel == f.rel {
			f.sum = w.cache.match(old[j], &f.st)
		}
		if f.sum != nil {
			continue
		}
		fst, sum, err := hashFile(w.root.OpenScanStat, f.rel, w.root.Path(f.rel), w.maxBytes)
		if err != nil {
			return 0, err
		}
		total += fst.Size - f.st.Size
		f.st, f.mode, f.sum = fst, fst.Mode, sum
	}
	return total, nil
}

// digest sets c.Digest from the files in path order, and c.Shared to the
// regular files with another name.
func (w *contentWalk) digest(order []int32) {
	h := sha256.New()
	var line []byte
	for _, i := range order {
		f := &w.files[i]
		// "%q %o\n" of the path and mode, then the file's own line: a
		// link's target quoted after "-> ", a regular file's sum in hex.
		line = appendQuote(line[:0], f.rel)
		line = append(line, ' ')
		line = strconv.AppendUint(line, uint64(f.mode), 8)
		line = append(line, '\n')
		switch {
		case f.mode&fs.ModeSymlink != 0:
			line = strconv.AppendQuote(append(line, "-> "...), f.target)
			line = append(line, '\n')
		case f.mode.IsRegular():
			line = hex.AppendEncode(line, f.sum)
			line = append(line, '\n')
			if f.st.Nlink > 1 {
				w.c.Shared = append(w.c.Shared, f.rel)
			}
		}
		h.Write(line)
	}
	w.c.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// recordCache writes the walk to the cache, if there is one: a full walk
// ran, so the cache did not describe the tree as it is (or had racy
// entries), and is written anew.
func (w *contentWalk) recordCache() {
	if w.cache == nil {
		return
	}
	w.cache.changed, w.cache.nextDigest = true, w.c.Digest
	for _, d := range w.dirs {
		w.cache.record(d.rel, &d.st, nil, "")
	}
	for i := range w.files {
		f := &w.files[i]
		var sum []byte
		if f.mode.IsRegular() {
			sum = f.sum
		}
		w.cache.record(f.rel, &f.st, sum, f.target)
	}
}

// sortedOrder is the indexes of files in path order: sorted through an
// index, as the entries are too large to move, in two halves at once
// and merged.
func sortedOrder(files []contentFile) []int32 {
	order := make([]int32, len(files))
	for i := range order {
		order[i] = int32(i)
	}
	byPath := func(a, b int32) int { return strings.Compare(files[a].rel, files[b].rel) }
	if len(order) < 4096 {
		slices.SortFunc(order, byPath)
		return order
	}
	half := len(order) / 2
	a, b := order[:half], order[half:]
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(a, byPath) })
	slices.SortFunc(b, byPath)
	wg.Wait()
	out := make([]int32, 0, len(order))
	for len(a) > 0 && len(b) > 0 {
		if byPath(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// appendQuote is strconv.AppendQuote of s, with nothing to escape in
// most paths taken as they are.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// openStat opens a regular file for reading and says what its
// descriptor is: fsutil.ScanDir's and fsutil.Root's OpenStat.
type openStat func(name string) (*os.File, fsutil.ScanStat, error)

// hashFile opens the regular file name with open (beneath the folder
// held open, or through the extension's Root; where names it) and
// returns what its descriptor is (fstat) and the SHA-256 of its content. A file longer
// than limit bytes is an error, not hashed in part: the bytes past the
// bound would not be bound by consent.
func hashFile(open openStat, name, where string, limit int64) (fsutil.ScanStat, []byte, error) {
	file, fi, err := open(name)
	if err != nil {
		return fi, nil, err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, limit+1))
	if err != nil {
		return fi, nil, fmt.Errorf("read %s: %w", where, err)
	}
	if n > limit {
		return fi, nil, &TooLargeError{File: where, Bytes: limit}
	}
	return fi, h.Sum(nil), nil
}

// fileState is the entry of Content.Files for a file of mode and hash sum.
func fileState(mode fs.FileMode, sum []byte) string {
	if sum == nil {
		return mode.String()
	}
	return mode.String() + " " + hex.EncodeToString(sum)
}

// errCountCap stops the count of a folder past the bounds.
var errCountCap = errors.New("counted enough files past the bound")

// TooLargeError is an extension folder past the bounds consent can bind
// (maxContentFiles, maxContentBytes), or one file of it larger than the
// bytes bound (File set). Its message says which bound was passed, what
// was found, and what to do.
type TooLargeError struct {
	Dir   string // the extension's folder
	Files int    // the bound of files
	Bytes int64  // the bound of bytes
	File  string
	// Found and FoundBytes are the files and their bytes counted;
	// AtLeast says the count stopped before the folder's end.
	Found      int
	FoundBytes int64
	AtLeast    bool
}

func (e *TooLargeError) Error() string {
	pre := "gemkit cannot bind your consent to the files of the extension in " + Printable(e.Dir) + ", so it runs neither its tools nor its MCP servers: "
	if e.File != "" {
		return pre + fmt.Sprintf("%s is larger than %s, the most gemkit binds consent to; remove it from the extension's folder (a build's output, a download) or keep it outside", Printable(e.File), boundWords(e.Bytes))
	}
	return pre + e.found() + " (it hashes every file, and checks them at each start); remove what the extension does not run: a build's caches, a node_modules' development dependencies (npm prune --omit=dev); .git is left out already"
}

// found says which bound was passed, by what count.
func (e *TooLargeError) found() string {
	most := ""
	if e.AtLeast {
		most = "at least "
	}
	files := fmt.Sprintf("%s%d files", most, e.Found)
	bytes := most + Size(e.FoundBytes)
	if e.FoundBytes >= 1024 {
		bytes += fmt.Sprintf(" (%d bytes)", e.FoundBytes)
	}
	manyFiles, manyBytes := e.Found > e.Files, e.FoundBytes > e.Bytes
	switch {
	case manyFiles && manyBytes:
		return fmt.Sprintf("it holds %s of %s, past both bounds gemkit binds consent to: %d files and %s", files, bytes, e.Files, boundWords(e.Bytes))
	case manyBytes:
		return fmt.Sprintf("its files come to %s, past the %s gemkit binds consent to (the bound of %d files is not passed)", bytes, boundWords(e.Bytes), e.Files)
	}
	s := fmt.Sprintf("it holds %s, past the %d files gemkit binds consent to", files, e.Files)
	if !e.AtLeast {
		s += fmt.Sprintf(" (the bound of %s is not passed: its files come to %s)", boundWords(e.Bytes), Size(e.FoundBytes))
	}
	return s
}

// boundWords is a bound of n bytes in GiB or MiB (below a MiB, as Size
// says it).
func boundWords(n int64) string {
	if n < 1<<20 {
		return Size(n)
	}
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// leftOutOfContent reports whether the path rel of an extension's folder
// is one consent's digest leaves out: .git, the settings file, gemkit's
// install metadata. gemkit's copy of the folder as agreed to leaves out
// the same (KeepAgreedCopy).
func leftOutOfContent(rel string, dir bool) bool {
	if dir {
		return rel == ".git"
	}
	return rel == ".env" || rel == InstallMetadataFile
}
