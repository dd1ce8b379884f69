package sandbox

import (
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
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/permission"
)

// A placeholder is the empty folder or file gemkit puts at an absent
// guarded path for the read-only bind that keeps a tool from creating it
// (as Codex and sandbox-runtime do). It lies in the user's real folder, so
// every gemkit process of the user sees it, and removing it is dangerous:
// the kernel lets a mount point of another mount namespace be removed and
// then detaches that mount there, so a tool still running with it bound
// would see the real folder again and could create the path. Its
// lifetime is therefore kept in a lock file per path, in a folder of
// gemkit's no tool can reach:
//   - every run that binds the path holds a shared flock on its lock
//     file, whether it made the placeholder or found it;
//   - the run that makes it records its identity (device, inode, change
//     time) in the lock file;
//   - at the end of a run only the one that gets the exclusive lock
//     without waiting (no other run, in any process, still holds it)
//     removes the placeholder, and only while the path is still that very
//     placeholder and empty, so nothing a person made there is removed;
//   - that run then removes the lock file too, while it holds it
//     exclusively, unless the placeholder stays (not empty, or not
//     removable), so the folder holds a lock only for a placeholder that
//     exists or a run under way. A run that opened the lock file just
//     before it was removed finds, once its lock is granted, that the
//     name no longer leads to the file it locked, and opens it again
//     (the usual way to remove a file others flock). Lock files left by
//     a process that was killed, and those of versions that kept every
//     lock, are swept once per launcher (sweepLocks).

// heldPath is one guarded path a run holds: its lock file, locked shared.
type heldPath struct {
	path string
	lock *os.File
	dir  bool // what its placeholder is
}

// placeholderID is what identifies the placeholder that was made: a
// folder or file the user makes later at the same path, even one that
// reuses the inode number, has another change time.
type placeholderID struct {
	dev, ino            uint64
	ctimeSec, ctimeNsec int64
}

func (id placeholderID) String() string {
	return fmt.Sprintf("%020d %020d %020d %09d\n", id.dev, id.ino, id.ctimeSec, id.ctimeNsec)
}

func identify(fi fs.FileInfo) (placeholderID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return placeholderID{}, false
	}
	return placeholderID{uint64(st.Dev), st.Ino, st.Ctim.Sec, st.Ctim.Nsec}, true
}

// lockDir returns the folder of the placeholder locks, made private if
// it is new; one that another user owns or others may enter is refused,
// since whoever can write a lock could hold a placeholder or name one.
// The folder is the account's home folder's ~/.config/gemkit/placeholders
// (permission.AccountHome), which neither HOME nor XDG_CONFIG_HOME moves:
// gemkit processes started with different environments must still see
// each other's locks. Where it cannot be made (no home folder of this
// user's, or one it may not write) the locks live in
// /tmp/gemkit-placeholders-UID, the same for every gemkit process of the
// user.
func (l *Launcher) lockDir() (string, error) {
	if l.LockDir != "" {
		return privateDir(l.LockDir)
	}
	if home := permission.AccountHome(); home != "" {
		dir, err := privateDir(filepath.Join(home, ".config", "gemkit", "placeholders"))
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, unix.EROFS) {
			return dir, err
		}
	}
	return privateDir(filepath.Join("/tmp", "gemkit-placeholders-"+strconv.Itoa(os.Getuid())))
}

// privateDir makes dir, the folder of the placeholder locks, and checks
// it as every private folder of gemkit's is (PrivateDir).
func privateDir(dir string) (string, error) {
	if err := PrivateDir(permission.AccountHome(), dir); err != nil {
		return "", fmt.Errorf("sandbox: the folder of the placeholder locks: %w", err)
	}
	return dir, nil
}

// lockName is the lock file of path: a hash, so that the folder says
// nothing of where a person works. Its contents (record) name the path.
func lockName(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock")
}

// hold takes each guarded path of the run: it locks it shared and, where
// it is absent, puts a placeholder there (an empty folder or file),
// recording which; it returns the paths held, for release. A path that
// exists and was never a placeholder (no lock file) is the user's, bound
// as it is.
func (l *Launcher) hold(overlays []overlay) (held []heldPath, err error) {
	defer func() {
		if err != nil {
			l.release(held)
			held = nil
		}
	}()
	var dir string
	for i, o := range overlays {
		if !o.guarded || o.pattern {
			continue
		}
		if h, ok := l.reuse(o); ok {
			held = append(held, h)
			continue
		}
		if dir == "" {
			if dir, err = l.lockDir(); err != nil {
				return held, err
			}
			l.sweepOnce.Do(func() { l.sweepLocks(dir, time.Now()) })
		}
		f, err := lockShared(lockName(dir, o.path), o.path, o.absent)
		if err != nil {
			return held, err
		}
		if f == nil {
			continue // the user's own, never a placeholder
		}
		made, err := makePlaceholder(f, o.path, o.dir)
		if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS) {
			// This user cannot create it, so neither can the tool,
			// which runs as this user: nothing to bind over.
			l.releaseOne(heldPath{path: o.path, lock: f})
			overlays[i].guarded = false
			continue
		}
		if err != nil {
			l.releaseOne(heldPath{path: o.path, lock: f})
			return held, fmt.Errorf("sandbox: a placeholder that keeps the tool from creating %s: %w", o.path, err)
		}
		if made {
			l.logger().Debug("sandbox: placeholder made", "path", o.path)
		}
		h := heldPath{path: o.path, lock: f, dir: o.dir}
		l.keep(h)
		held = append(held, h)
	}
	return held, nil
}

// kept is a guarded path a launcher holds between runs (Launcher.Linger):
// its lock stays shared, so no gemkit process removes its placeholder,
// and a run that follows binds it as it is, making and removing nothing.
type kept struct {
	held  heldPath
	users int // runs that hold it now
	timer *time.Timer
}

// reuse takes a path this launcher still holds from an earlier run, if it
// does, making its placeholder again if it went meanwhile (the lock is
// held, so no other gemkit process may be removing it).
func (l *Launcher) reuse(o overlay) (heldPath, bool) {
	if l.Linger <= 0 {
		return heldPath{}, false
	}
	l.keptMu.Lock()
	defer l.keptMu.Unlock()
	k := l.kept[o.path]
	if k == nil {
		return heldPath{}, false
	}
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	if _, err := os.Lstat(o.path); errors.Is(err, fs.ErrNotExist) {
		if _, err := makePlaceholder(k.held.lock, o.path, k.held.dir); err != nil {
			// Held by no run now: given back, and the caller holds
			// the path afresh.
			if k.users == 0 {
				delete(l.kept, o.path)
				l.releaseOne(k.held)
			}
			return heldPath{}, false
		}
	}
	k.users++
	return k.held, true
}

// keep records a path a run holds, for runs that follow within Linger.
func (l *Launcher) keep(h heldPath) {
	if l.Linger <= 0 {
		return
	}
	l.keptMu.Lock()
	defer l.keptMu.Unlock()
	if l.kept == nil {
		l.kept = map[string]*kept{}
	}
	if l.kept[h.path] != nil {
		// Two runs took it at once: the other one's hold is kept,
		// this one's ends with its run.
		return
	}
	l.kept[h.path] = &kept{held: h, users: 1}
}

// Close gives back every guarded path this launcher still holds between
// runs (Linger), removing the placeholders no other run uses, as the end
// of a run does without Linger. A long-lived caller that sets Linger calls
// it before it exits; runs that are still going give theirs back when
// they end.
func (l *Launcher) Close() {
	l.keptMu.Lock()
	l.closed = true
	var idle []heldPath
	for p, k := range l.kept {
		if k.users == 0 {
			if k.timer != nil {
				k.timer.Stop()
			}
			idle = append(idle, k.held)
			delete(l.kept, p)
		}
	}
	l.keptMu.Unlock()
	l.release(idle)
}

// lockShared opens the lock file name of path and locks it shared. For a
// path that existed when the rules were made (absent false) a missing
// lock file means the path is the user's (nil, nil), unless the path has
// gone meanwhile, which makes it absent.
//
// The run that gives a lock back last removes its file, so a lock granted
// on a file the name no longer leads to was given back meanwhile: it is
// opened again.
func lockShared(name, path string, absent bool) (*os.File, error) {
	for {
		f, err := openLock(name, path, absent)
		if f == nil || err != nil {
			return f, err
		}
		if err := flock(f, unix.LOCK_SH); err != nil {
			f.Close()
			return nil, fmt.Errorf("sandbox: locking %s: %w", path, err)
		}
		if stillNamed(f, name) {
			return f, nil
		}
		f.Close()
	}
}

func openLock(name, path string, absent bool) (*os.File, error) {
	flags := os.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	f, err := os.OpenFile(name, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if !absent {
			if _, err := os.Lstat(path); err == nil {
				return nil, nil
			}
		}
		f, err = os.OpenFile(name, flags|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: the lock of %s: %w", path, err)
	}
	return f, nil
}

// stillNamed reports whether name still leads to the file f has open.
func stillNamed(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(name)
	return err == nil && os.SameFile(a, b)
}

// makePlaceholder puts a placeholder at path if nothing is there and
// records its identity in the lock file, which the caller holds shared:
// no one removes a placeholder then, and of two runs making one only the
// first succeeds.
func makePlaceholder(lock *os.File, path string, dir bool) (made bool, err error) {
	if dir {
		err = os.Mkdir(path, 0o755)
	} else {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			err = f.Close()
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return false, nil // the user's, or another run's placeholder: bound as it is
	}
	if err != nil {
		return false, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return true, err
	}
	id, ok := identify(fi)
	if !ok {
		return true, errors.New("no device and inode")
	}
	// Of fixed width, so one write replaces the last record whole; the
	// path follows it, the same for every record of this lock file, so
	// that a sweep knows which placeholder a lock left behind is for.
	_, err = lock.WriteAt([]byte(id.String()+path+"\n"), 0)
	return true, err
}

// readRecord reads the record of a lock file: the identity of the
// placeholder last made and the path it is at ("" in the lock files of
// versions that did not write it). ok is false for an unreadable record;
// an empty file (no placeholder was ever made through it) gives a zero
// identity and ok.
func readRecord(f *os.File) (id placeholderID, path string, made, ok bool) {
	rec, err := io.ReadAll(io.NewSectionReader(f, 0, 4096+unix.PathMax))
	if err != nil {
		return id, "", false, false
	}
	if len(rec) == 0 {
		return id, "", false, true
	}
	line, rest, _ := strings.Cut(string(rec), "\n")
	if _, err := fmt.Sscanf(line, "%d %d %d %d", &id.dev, &id.ino, &id.ctimeSec, &id.ctimeNsec); err != nil {
		return id, "", true, false
	}
	return id, strings.TrimSuffix(rest, "\n"), true, true
}

// release gives back the paths a run held. The run that finds itself the
// last holder of one, in any process, removes its placeholder if the path
// is still the very placeholder recorded and empty. With Linger, a path
// no run of this launcher holds any more is given back only once Linger
// has passed without another run taking it.
func (l *Launcher) release(held []heldPath) {
	for _, h := range held {
		if !l.unkeep(h) {
			l.releaseOne(h)
		}
	}
}

// unkeep ends a run's hold of a kept path, giving it back after Linger
// once no run holds it; false for a path the launcher does not keep.
func (l *Launcher) unkeep(h heldPath) bool {
	if l.Linger <= 0 {
		return false
	}
	l.keptMu.Lock()
	defer l.keptMu.Unlock()
	k := l.kept[h.path]
	if k == nil || k.held.lock != h.lock {
		return false
	}
	if k.users--; k.users > 0 {
		return true
	}
	if l.closed {
		delete(l.kept, h.path)
		return false
	}
	k.timer = time.AfterFunc(l.Linger, func() {
		l.keptMu.Lock()
		if l.kept[h.path] != k || k.users > 0 {
			l.keptMu.Unlock()
			return
		}
		delete(l.kept, h.path)
		l.keptMu.Unlock()
		l.releaseOne(k.held)
	})
	return true
}

func (l *Launcher) releaseOne(h heldPath) {
	defer h.lock.Close()
	// Not waiting: a run that holds it still is using the placeholder.
	// (A failed upgrade drops the shared lock, which is being given back
	// anyway.)
	if err := flock(h.lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return
	}
	l.retire(h.lock, h.path)
}

// retire removes the placeholder of path, if it is still the very one
// the lock file f records and empty, then the lock file itself, unless
// the placeholder stays. The caller holds f exclusively. Between giving
// up its shared lock and getting the exclusive one, another run may have
// retired the same lock file: it is then no longer named, and left
// alone (the name may lead to a newer run's lock file by now).
func (l *Launcher) retire(f *os.File, path string) {
	name := f.Name()
	if !stillNamed(f, name) {
		return
	}
	want, recorded, made, ok := readRecord(f)
	if !ok {
		l.logger().Warn("sandbox: unreadable placeholder record; kept", "path", path, "lock", name)
		return
	}
	if path == "" {
		path = recorded
	}
	if made && path != "" {
		if fi, err := os.Lstat(path); err == nil {
			got, ok := identify(fi)
			switch {
			case ok && got == want && (fi.IsDir() || fi.Mode().IsRegular() && fi.Size() == 0):
				// A folder is removed only while empty (rmdir).
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					l.logger().Debug("sandbox: a placeholder stays", "path", path, "err", err)
					return // the lock stays with it, for a later run to remove it
				}
			case ok && got == want:
				// The very placeholder, no longer empty: kept with its
				// lock, and removed by a later run once empty again.
				return
			case ok:
				l.logger().Debug("sandbox: placeholder replaced by the user's own; kept", "path", path)
			}
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return // cannot tell: the lock stays
		}
	} else if made {
		// A lock file of a version that did not record the path, whose
		// placeholder cannot be found: sweepLocks removes it only once
		// it is old.
		return
	}
	// Nothing at the path is a placeholder of gemkit's now: the next run
	// that needs it makes a new lock file, and a path that exists without
	// one is the user's.
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.logger().Debug("sandbox: removing a placeholder lock", "lock", name, "err", err)
	}
}

// staleLegacyLock is how old a lock file of a version that did not record
// the path must be for sweepLocks to remove it. Its placeholder, if a
// killed process left one, is then taken for the user's: still bound
// read-only, never removed.
const staleLegacyLock = 7 * 24 * time.Hour

// sweepLocks removes the lock files no run holds that name no placeholder
// left in place: those of runs whose process was killed before it gave
// them back (removing their placeholder first, if it is still the very
// one and empty), and those versions before this one kept for every
// protected name of every workspace. A lock file another run holds, in
// any process, is skipped without waiting.
func (l *Launcher) sweepLocks(dir string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		name := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if flock(f, unix.LOCK_EX|unix.LOCK_NB) == nil {
			_, path, made, ok := readRecord(f)
			fi, err := f.Stat()
			switch {
			case path != "" && lockName(dir, path) != name:
				// Not the lock of the path it names: left alone.
			case ok && made && path == "" && err == nil && now.Sub(fi.ModTime()) > staleLegacyLock:
				if stillNamed(f, name) {
					_ = os.Remove(name)
				}
			case ok:
				l.retire(f, path)
			}
		}
		f.Close()
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// GuardRemovedError is what Wait returns when a protected path bound
// read-only into the tool's root was removed or replaced in the real
// folder while the tool ran (by the person, or by a program outside the
// sandbox). The kernel then detaches that bind in the tool's root, which
// would let the tool create the path for real, so the tool is stopped.
type GuardRemovedError struct{ Path string }

func (e *GuardRemovedError) Error() string {
	return fmt.Sprintf("sandbox: %s was removed or replaced while the tool ran, which takes a protected path out of the tool's read-only view; the tool was stopped (whatever is at %s now may be the tool's: check it)", e.Path, e.Path)
}

// ProtectedNameError is what Wait returns when the tool created a name
// that a protected pattern matches (permission.Guarded's Pattern, such as
// *.sublime-project at the workspace's top): nothing can be bound over a
// name not there yet, so the launcher watches the folder and stops the
// tool at the first one. What the tool made is moved aside to
// Path+MovedSuffix (never removed: the person may have made it
// meanwhile), so that the editor does not load it.
type ProtectedNameError struct {
	Path  string
	Moved string // "" when it could not be moved aside
	Why   string
	// Gone: what the tool made was gone when it ended (Path is then
	// the pattern).
	Gone bool
}

// MovedSuffix is appended to a protected name a tool created, when the
// launcher moves it aside.
const MovedSuffix = ".gemkit-refused"

func (e *ProtectedNameError) Error() string {
	s := fmt.Sprintf("sandbox: the tool created %s, a protected name (%s); the tool was stopped", e.Path, e.Why)
	if e.Gone {
		return s + ", and what it made is gone"
	}
	if e.Moved != "" {
		return s + fmt.Sprintf(" and what it made was moved to %s: check it before you rename it back", e.Moved)
	}
	return s + " and what it made could not be moved aside: check it before your editor opens it"
}

// moveAside renames name in dir to a free name ending in MovedSuffix, in
// dir itself (opened without following links): a rename keeps every byte.
func moveAside(dir, name string) (string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	for i := 0; i < 100; i++ {
		to := name + MovedSuffix
		if i > 0 {
			to = fmt.Sprintf("%s%s-%d", name, MovedSuffix, i)
		}
		err = unix.Renameat2(fd, name, fd, to, unix.RENAME_NOREPLACE)
		if err == nil {
			return filepath.Join(dir, to), nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", err
		}
	}
	return "", err
}

// guardWatcher watches, for all runs of a launcher, the folders that hold
// the guarded paths bound into the tools' roots, for their removal or
// replacement, and the folders of the protected patterns, for a new name
// they match. One inotify instance serves every run, each adding and
// removing its watches: closing an instance that had watches waits for
// the kernel's SRCU grace period, about 10 ms a run.
type guardWatcher struct {
	f  *os.File
	fd int

	mu   sync.Mutex
	dirs map[int]*watchedDir // by watch descriptor
}

type watchedDir struct {
	refs     int
	names    map[string][]*guardRun
	patterns map[string][]*guardRun
}

// guardRun is one run's watches.
type guardRun struct {
	wds   []int
	names []string
	pats  []bool // whether names[i] is a pattern
	kill  func() // nil until the tool runs
	hit   string // the path removed or replaced, if one was
	paths map[string]string
	// made says the tool created a name a pattern matches; patterns are
	// the run's patterns, looked for again when it ends.
	made     bool
	patterns []overlay
}

func newGuardWatcher() (*guardWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("sandbox: watching the protected paths: %w", err)
	}
	w := &guardWatcher{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, dirs: map[int]*watchedDir{}}
	go w.serve()
	return w, nil
}

// watch starts watching a run's guarded paths, before its tool starts, so
// that nothing done meanwhile is missed.
func (w *guardWatcher) watch(overlays []overlay) (*guardRun, error) {
	r := &guardRun{paths: map[string]string{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range overlays {
		if !o.guarded {
			continue
		}
		dir, name := filepath.Dir(o.path), filepath.Base(o.path)
		wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
		if err != nil {
			w.unwatchLocked(r)
			return nil, fmt.Errorf("sandbox: watching %s: %w", dir, err)
		}
		d := w.dirs[wd]
		if d == nil {
			d = &watchedDir{names: map[string][]*guardRun{}, patterns: map[string][]*guardRun{}}
			w.dirs[wd] = d
		}
		d.refs++
		if o.pattern {
			d.patterns[name] = append(d.patterns[name], r)
			r.patterns = append(r.patterns, o)
		} else {
			d.names[name] = append(d.names[name], r)
			r.paths[name] = o.path
		}
		r.wds, r.names, r.pats = append(r.wds, wd), append(r.names, name), append(r.pats, o.pattern)
	}
	return r, nil
}

// arm has kill called at the first removal or replacement, at once if
// one happened already.
func (w *guardWatcher) arm(r *guardRun, kill func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.kill = kill
	if r.hit != "" || r.made {
		kill()
	}
}

// unwatch ends a run's watches and returns what stopped the tool, if
// anything did: a guarded path removed or replaced (GuardRemovedError),
// or a protected name created (ProtectedNameError). The tool has ended:
// every name a pattern matches that was not there when the run began is
// moved aside now, found by listing the folder again, so that however
// many the tool made, and under whatever names it renamed them to, none
// stays.
func (w *guardWatcher) unwatch(r *guardRun) error {
	w.mu.Lock()
	w.unwatchLocked(r)
	hit, made := r.hit, r.made
	w.mu.Unlock()
	if hit != "" {
		return &GuardRemovedError{Path: hit}
	}
	if !made {
		return nil
	}
	var first *ProtectedNameError
	for _, o := range r.patterns {
		dir, pat := filepath.Dir(o.path), filepath.Base(o.path)
		entries, err := os.ReadDir(dir)
		if err != nil && first == nil {
			first = &ProtectedNameError{Path: o.path, Why: o.why}
		}
		for _, e := range entries {
			if ok, _ := filepath.Match(pat, e.Name()); !ok || slices.Contains(o.keep, e.Name()) || strings.HasSuffix(e.Name(), MovedSuffix) {
				continue
			}
			pe := &ProtectedNameError{Path: filepath.Join(dir, e.Name()), Why: o.why}
			if to, err := moveAside(dir, e.Name()); err == nil {
				pe.Moved = to
			}
			if first == nil || first.Moved != "" && pe.Moved == "" {
				first = pe
			}
		}
	}
	if first == nil {
		return &ProtectedNameError{Path: r.patterns[0].path, Why: r.patterns[0].why, Gone: true}
	}
	return first
}

func (w *guardWatcher) unwatchLocked(r *guardRun) {
	for i, wd := range r.wds {
		d := w.dirs[wd]
		if d == nil {
			continue
		}
		if r.pats[i] {
			d.patterns[r.names[i]] = slices.DeleteFunc(d.patterns[r.names[i]], func(x *guardRun) bool { return x == r })
		} else {
			d.names[r.names[i]] = slices.DeleteFunc(d.names[r.names[i]], func(x *guardRun) bool { return x == r })
		}
		if d.refs--; d.refs == 0 {
			delete(w.dirs, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
	r.wds, r.names, r.pats = nil, nil, nil
}

// serve reads the events for as long as the launcher lives.
func (w *guardWatcher) serve() {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		w.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := unix.ByteSliceToString(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
			off += unix.SizeofInotifyEvent + int(ev.Len)
			d := w.dirs[int(ev.Wd)]
			if d == nil {
				continue
			}
			if ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
				for _, r := range d.names[name] {
					if r.hit == "" {
						r.hit = r.paths[name]
						if r.kill != nil {
							r.kill()
						}
					}
				}
			}
			if ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
				for pat, runs := range d.patterns {
					if ok, _ := filepath.Match(pat, name); !ok {
						continue
					}
					for _, r := range runs {
						r.made = true
						if r.kill != nil {
							r.kill()
						}
					}
				}
			}
		}
		w.mu.Unlock()
	}
}
