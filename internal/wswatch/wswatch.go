// Package wswatch reports the files a person saves in the workspace
// folders, so that a companion with no editor attached (the terminal
// front-end of `gemkit ide serve`) can still tell the CLI what the person
// works on: each saved file becomes the newest open file, the active one.
//
// It watches every folder of the workspace that git would not ignore: the
// .gitignore files (from the enclosing repository's top down) and
// .git/info/exclude are honoured, .git itself and editors' swap, backup and
// lock files are always skipped. It is bounded: at most MaxDirs folders are
// watched (a clear log line says when the cap is reached), at most
// maxPending changes wait to settle (the oldest are dropped first; only
// the newest ide.MaxOpenFiles can matter), and a new folder is looked into
// for at most maxScan entries. Changes settle for Debounce before they are
// reported, since one save is often several writes, or a write to a
// temporary file and a rename.
//
// The file-system notification library (github.com/fsnotify/fsnotify) and
// the gitignore matcher (go-git's plumbing/format/gitignore) stay inside
// this package.
package wswatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

const (
	// DefaultMaxDirs is the default cap on watched folders. Linux gives
	// each user a limited number of inotify watches (often 8,192 on older
	// kernels) shared by every program that watches files.
	DefaultMaxDirs = 4096
	// DefaultDebounce is how long a file must stay untouched before its
	// save is reported: long enough for an editor's write-and-rename, short
	// enough that the CLI knows before the person has typed a question.
	DefaultDebounce = 200 * time.Millisecond
	// maxPending bounds the changes waiting to settle; past it the oldest
	// is dropped.
	maxPending = 256
	// maxScan bounds the entries of a new folder looked at for files just
	// saved in it (created before its watch was in place).
	maxScan = 256
	// freshWindow is how recently a file in a new folder must have been
	// modified to count as saved there.
	freshWindow = 5 * time.Second
)

// Sink receives what the watcher sees: a saved file is focused (made the
// newest, active open file) and a file that left the disk is deleted.
// companion.Server is one.
type Sink interface {
	Focus(path string, cursor *ide.Cursor, selectedText string)
	Delete(path string)
}

// Options configure a Watcher.
type Options struct {
	// Roots are the workspace folders, absolute.
	Roots []string
	// MaxDirs caps the watched folders; 0 means DefaultMaxDirs.
	MaxDirs int
	// Debounce is how long a file settles before it is reported; 0 means
	// DefaultDebounce.
	Debounce time.Duration
	// Logger receives the watcher's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Watcher watches the workspace folders. New starts watching; Run reports
// to a Sink until its context ends.
type Watcher struct {
	opts  Options
	log   *slog.Logger
	fsw   *fsnotify.Watcher
	roots []*root // longest path first, so the innermost root owns a path

	mu     sync.Mutex // guards dirs, for Dirs
	dirs   map[string]bool
	capped bool

	// syncs takes Sync's requests to Run; stopped is closed when Run
	// ends.
	syncs   chan chan struct{}
	stopped chan struct{}

	// waiting is how many changes wait to settle (Waiting).
	waiting atomic.Int64

	// Used by New, then only by Run's goroutine.
	pending  map[string]change
	seq      uint64
	reported []string // saves reported, newest first, at most ide.MaxOpenFiles
}

type change struct {
	at  time.Time
	seq uint64
}

// New watches every folder of opts.Roots that git would not ignore, up to
// the cap. Nothing is reported until Run.
func New(opts Options) (*Watcher, error) {
	if len(opts.Roots) == 0 {
		return nil, errors.New("workspace watcher: no folder to watch")
	}
	if opts.MaxDirs <= 0 {
		opts.MaxDirs = DefaultMaxDirs
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("workspace watcher: %w", err)
	}
	w := &Watcher{opts: opts, log: log, fsw: fsw, dirs: map[string]bool{}, pending: map[string]change{},
		syncs: make(chan chan struct{}), stopped: make(chan struct{})}
	for _, dir := range opts.Roots {
		if !filepath.IsAbs(dir) {
			fsw.Close()
			return nil, fmt.Errorf("workspace watcher: %s is not an absolute path", dir)
		}
		w.roots = append(w.roots, newRoot(filepath.Clean(dir)))
	}
	slices.SortFunc(w.roots, func(a, b *root) int { return len(b.dir) - len(a.dir) })
	for _, r := range w.roots {
		w.addTree(r.dir, time.Time{})
	}
	return w, nil
}

// Dirs is the number of folders being watched.
func (w *Watcher) Dirs() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirs)
}

// Close stops watching; use it only when Run is never called.
func (w *Watcher) Close() error { return w.fsw.Close() }

// Run reports saves and deletions to sink until ctx ends, then stops
// watching.
func (w *Watcher) Run(ctx context.Context, sink Sink) error {
	defer close(w.stopped)
	defer w.fsw.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			w.handle(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("workspace watcher: the kernel's event queue overflowed, so some saves in that burst were not seen")
			} else {
				w.log.Warn("workspace watcher", "err", err)
			}
		case now := <-timer.C:
			w.flush(sink, now)
		case done := <-w.syncs:
			if !w.drain() {
				close(done)
				return nil
			}
			// Everything seen is reported now, settled or not.
			w.flush(sink, time.Now().Add(w.opts.Debounce))
			close(done)
		}
		w.arm(timer)
	}
}

// syncQuiet is how long Sync waits for the kernel's next queued event:
// those queued before Sync was called reach Events within it.
const syncQuiet = 5 * time.Millisecond

// Sync has Run report at once every change seen so far, settled or not,
// and returns once it has (or ctx ended, or Run is not running): whoever
// answers from the files (a language server asked about them) then knows
// of a file written just before. Run must have been started.
func (w *Watcher) Sync(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case w.syncs <- done:
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiting reports whether Run has seen changes it has not reported yet
// (they wait to settle): a question that names no file, such as a
// workspace symbol search, then calls Sync first, and the others pay
// nothing.
func (w *Watcher) Waiting() bool { return w.waiting.Load() > 0 }

// drain records the events queued, until none comes for syncQuiet;
// false when the watcher closed.
func (w *Watcher) drain() bool {
	quiet := time.NewTimer(syncQuiet)
	defer quiet.Stop()
	for {
		select {
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return false
			}
			w.handle(ev)
			quiet.Reset(syncQuiet)
		case <-quiet.C:
			return true
		}
	}
}

// handle records one notification.
func (w *Watcher) handle(ev fsnotify.Event) {
	name := filepath.Clean(ev.Name)
	if alwaysSkipped(filepath.Base(name)) {
		return
	}
	r := w.rootOf(name)
	if r == nil {
		return
	}
	switch {
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if w.watching(name) {
			w.dropTree(name)
			return
		}
		if filepath.Base(name) == ".gitignore" {
			w.reloadIgnore(r, filepath.Dir(name))
		}
		w.mark(name)
	case ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write):
		// Only a creation can be a folder (a folder's own writes are not
		// reported on Linux); a burst of writes costs no system call.
		if ev.Has(fsnotify.Create) {
			fi, err := os.Lstat(name)
			if err != nil {
				w.mark(name) // gone already: settles as a deletion
				return
			}
			if fi.IsDir() {
				if !r.ignored(name, true) {
					// Files saved in it before its watch was in place
					// are found by their modification time; a folder
					// moved in keeps older ones, which are not reported.
					w.addTree(name, time.Now().Add(-w.opts.Debounce-freshWindow))
				}
				return
			}
		} else if w.watching(name) {
			return // a folder's write, on systems that report those
		}
		if filepath.Base(name) == ".gitignore" {
			w.reloadIgnore(r, filepath.Dir(name))
		}
		if !r.ignored(name, false) {
			w.mark(name)
		}
	}
}

// mark notes a change of name, which is reported once it has settled.
func (w *Watcher) mark(name string) {
	w.seq++
	w.pending[name] = change{at: time.Now(), seq: w.seq}
	if len(w.pending) <= maxPending {
		return
	}
	oldest, min := "", uint64(0)
	for p, c := range w.pending {
		if oldest == "" || c.seq < min {
			oldest, min = p, c.seq
		}
	}
	delete(w.pending, oldest)
}

// arm sets timer to fire when the oldest waiting change settles.
func (w *Watcher) arm(timer *time.Timer) {
	w.waiting.Store(int64(len(w.pending)))
	if len(w.pending) == 0 {
		timer.Stop()
		return
	}
	var first time.Time
	for _, c := range w.pending {
		if first.IsZero() || c.at.Before(first) {
			first = c.at
		}
	}
	timer.Reset(max(time.Until(first.Add(w.opts.Debounce)), time.Millisecond))
}

// flush reports the changes that have settled, oldest first, so that the
// newest save ends up the active file.
func (w *Watcher) flush(sink Sink, now time.Time) {
	type settled struct {
		path string
		seq  uint64
	}
	var ready []settled
	for p, c := range w.pending {
		if now.Sub(c.at) >= w.opts.Debounce {
			ready = append(ready, settled{p, c.seq})
			delete(w.pending, p)
		}
	}
	slices.SortFunc(ready, func(a, b settled) int { return cmp.Compare(a.seq, b.seq) })
	for _, s := range ready {
		fi, err := os.Lstat(s.path)
		switch {
		case err == nil && fi.Mode().IsRegular():
			w.log.Debug("workspace watcher: saved", "path", s.path)
			sink.Focus(s.path, nil, "")
			w.remember(s.path)
		case errors.Is(err, fs.ErrNotExist):
			if w.forget(s.path) {
				w.log.Debug("workspace watcher: gone", "path", s.path)
				sink.Delete(s.path)
			}
		}
	}
}

// remember puts path first among the saves reported.
func (w *Watcher) remember(path string) {
	w.forget(path)
	w.reported = slices.Insert(w.reported, 0, path)
	if len(w.reported) > ide.MaxOpenFiles {
		w.reported = w.reported[:ide.MaxOpenFiles]
	}
}

// forget drops path from the saves reported and says whether it was one.
func (w *Watcher) forget(path string) bool {
	i := slices.Index(w.reported, path)
	if i < 0 {
		return false
	}
	w.reported = slices.Delete(w.reported, i, i+1)
	return true
}

func (w *Watcher) rootOf(path string) *root {
	for _, r := range w.roots {
		if fsutil.Within(r.dir, path) {
			return r
		}
	}
	return nil
}

func (w *Watcher) watching(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirs[dir]
}

// addTree watches dir and the folders below it that are not ignored,
// within the cap. Regular files modified since savedSince (when not zero)
// are marked as saved.
func (w *Watcher) addTree(dir string, savedSince time.Time) {
	scanned := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				w.log.Debug("workspace watcher: cannot read folder", "dir", path, "err", err)
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		r := w.rootOf(path)
		if r == nil {
			return fs.SkipDir
		}
		if !d.IsDir() {
			if savedSince.IsZero() || !d.Type().IsRegular() || scanned >= maxScan {
				return nil
			}
			scanned++
			if alwaysSkipped(d.Name()) || d.Name() == ".gitignore" || r.ignored(path, false) {
				return nil
			}
			if fi, err := d.Info(); err == nil && !fi.ModTime().Before(savedSince) {
				w.mark(path)
			}
			return nil
		}
		if path != dir && (alwaysSkipped(d.Name()) || r.ignored(path, true)) {
			return fs.SkipDir
		}
		if path != r.dir && w.ownRoot(path, r) {
			return fs.SkipDir // another workspace folder, walked on its own
		}
		if !w.watch(path) {
			return fs.SkipAll
		}
		r.loadIgnore(path, w.log)
		return nil
	})
}

// ownRoot reports whether dir is a workspace folder other than r.
func (w *Watcher) ownRoot(dir string, r *root) bool {
	for _, o := range w.roots {
		if o != r && o.dir == dir {
			return true
		}
	}
	return false
}

// watch adds a watch on dir, and reports false once the cap is reached or
// the system refuses more watches.
func (w *Watcher) watch(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirs[dir] {
		return true
	}
	if len(w.dirs) >= w.opts.MaxDirs {
		if !w.capped {
			w.capped = true
			w.log.Warn(fmt.Sprintf("workspace watcher: watching the first %d folders only (the cap); saves in the others, such as %s, are not reported; list generated folders in .gitignore to leave them out", w.opts.MaxDirs, dir))
		}
		return false
	}
	if err := w.fsw.Add(dir); err != nil {
		if !w.capped {
			w.capped = true
			w.log.Warn(fmt.Sprintf("workspace watcher: the system refused to watch more folders after %d (%v); saves in the others, such as %s, are not reported; raise fs.inotify.max_user_watches or list generated folders in .gitignore", len(w.dirs), err, dir))
		}
		return false
	}
	w.dirs[dir] = true
	return true
}

// dropTree forgets dir and the folders below it (removed or moved away),
// and marks the saves reported there, which settle as deletions.
func (w *Watcher) dropTree(dir string) {
	w.mu.Lock()
	for d := range w.dirs {
		if fsutil.Within(dir, d) {
			delete(w.dirs, d)
			_ = w.fsw.Remove(d) // the kernel may have dropped it already
		}
	}
	w.capped = false
	w.mu.Unlock()
	for _, p := range w.reported {
		if fsutil.Within(dir, p) {
			w.mark(p)
		}
	}
	if r := w.rootOf(dir); r != nil {
		r.dropIgnore(dir)
	}
}

// reloadIgnore rereads dir's .gitignore and watches the folders below dir
// that it no longer ignores.
func (w *Watcher) reloadIgnore(r *root, dir string) {
	r.loadIgnore(dir, w.log)
	if w.watching(dir) {
		w.addTree(dir, time.Time{})
	}
}

// alwaysSkipped reports names never watched nor reported whatever
// .gitignore says: git's own folder, and the swap, backup, lock and probe
// files editors write beside the file being saved.
func alwaysSkipped(name string) bool {
	if name == ".git" || name == "4913" { // 4913: Vim's probe of a folder's permissions
		return true
	}
	for _, pat := range []string{"*~", ".*.sw?", "*.swp", "#*#", ".#*", ".*.kate-swp", "*.tmp"} {
		if ok, _ := filepath.Match(pat, name); ok {
			return true
		}
	}
	return false
}
