package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
	return placeholderID{uint64(st.Dev), st.Ino, int64(st.Ctim.Sec), int64(st.Ctim.Nsec)}, true
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
