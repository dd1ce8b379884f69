package treewatch

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Names is a watch of named files and folders, not of their trees: a
// reader that reads those files and lists those folders (an extension
// store's records of one extension) can reuse what it computed from
// them while Changed says false.
//
// It errs on the side of "changed" as Watch does: any event of a listed
// folder, any event of a named file or naming it in its folder, a lost
// event, a watch the kernel removed, a change of the mount table, or a
// path that leads to another file or folder (or to one where there was
// none) than when the watch was placed. A named file that does not
// exist is watched through its folder (its creation is an event there).
type Names struct {
	queue
	// wds are the watches whose every event counts; named, by folder
	// watch, the names whose events count in it.
	wds     map[int32]bool
	named   map[int32]map[string]bool
	paths   []pathID
	mu      sync.Mutex
	changed bool
}

// pathID is what a path led to when the watch was placed: its device
// and inode, or none.
type pathID struct {
	path     string
	dev, ino uint64
	none     bool
}

func idOf(path string) pathID {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return pathID{path: path, none: true}
	}
	return pathID{path: path, dev: uint64(st.Dev), ino: st.Ino}
}

// WatchNames watches the folders listed (each of their entries' events)
// and the files named (each one itself, and its name in its folder).
// Start reading them only after it returns.
func WatchNames(listed, files []string) (*Names, error) {
	q, err := openQueue()
	if err != nil {
		return nil, err
	}
	w := &Names{queue: q, wds: map[int32]bool{}, named: map[int32]map[string]bool{}}
	fd := q.fd
	// Each path's identity is taken before its watch is placed: a
	// change in between is either an event or another identity.
	for _, d := range listed {
		w.paths = append(w.paths, idOf(d))
		wd, err := unix.InotifyAddWatch(fd, d, dirMask&^unix.IN_DONT_FOLLOW)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("watching %s: %w", d, err)
		}
		w.wds[int32(wd)] = true
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		w.paths = append(w.paths, idOf(dir), idOf(f))
		wd, err := unix.InotifyAddWatch(fd, dir, dirMask&^unix.IN_DONT_FOLLOW)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("watching %s: %w", dir, err)
		}
		if !w.wds[int32(wd)] {
			if w.named[int32(wd)] == nil {
				w.named[int32(wd)] = map[string]bool{}
			}
			w.named[int32(wd)][filepath.Base(f)] = true
		}
		if w.paths[len(w.paths)-1].none {
			continue
		}
		wd, err = unix.InotifyAddWatch(fd, f, fileMask&^unix.IN_DONT_FOLLOW)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("watching %s: %w", f, err)
		}
		w.wds[int32(wd)] = true
	}
	return w, nil
}

// Changed reports whether any of the names may have changed since
// WatchNames began. Once true it stays true.
func (w *Names) Changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed || w.closed {
		return true
	}
	w.changed = w.events() || w.moved()
	return w.changed
}

// events reads the queued events, and says whether one counts.
func (w *Names) events() bool {
	var buf [8192]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err == unix.EAGAIN {
			return false
		}
		if err != nil || n <= 0 {
			return true
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if w.wds[ev.Wd] || ev.Mask&(unix.IN_Q_OVERFLOW|unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0 {
				return true
			}
			names, ok := w.named[ev.Wd]
			if !ok {
				return true // not a watch of ours: err on "changed"
			}
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if names[string(name)] {
				return true
			}
		}
	}
}

// moved says whether the mount table changed, or a path leads to
// another file or folder than when the watch was placed.
func (w *Names) moved() bool {
	if w.remounted() {
		return true
	}
	for _, p := range w.paths {
		if idOf(p.path) != p {
			return true
		}
	}
	return false
}

// Close ends the watch.
func (w *Names) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.close()
}
