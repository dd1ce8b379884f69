package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The watch of a run's guarded paths while its tool runs: a protected
// path bound into its root that is removed or replaced meanwhile, or a
// protected name created where a pattern guards the folder, stops the
// tool, and Wait says which (GuardRemovedError, ProtectedNameError).

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
