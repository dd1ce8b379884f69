// Package treewatch tells whether anything in a folder's tree may have
// changed since a point in time, so that a result computed from the
// tree after that point (a digest of its files) can be reused while
// nothing has: an inotify watch on the folder, each folder below it and
// each file, set before the caller reads the tree.
//
// It errs on the side of "changed": any event at all, a lost event (the
// queue's overflow), a watch the kernel removed, a change of the mount
// table of this process's namespace, or a path that no longer leads to
// the folder watched counts. What inotify cannot see is not covered:
// writes through a shared mapping of a file opened for writing before
// or after the watch (no event is sent for them). Only a process that
// may write the extension's files at all can make those, which no
// sandboxed process may.
package treewatch

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// MaxEntries bounds the files and folders one watch covers: a tree
// larger than this is not watched (New fails), and its readers read it
// again each time.
const MaxEntries = 4096

// Watch is a watch of one folder's tree.
type Watch struct {
	dir      string
	dev, ino uint64
	queue
	mu      sync.Mutex
	changed bool
}

const (
	dirMask  = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW
	fileMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW
)

// New watches the tree of dir (dir itself followed if a link, nothing
// below it). Links below it are watched as links (their targets are
// not in the tree). Start reading the tree only after New returns.
func New(dir string) (*Watch, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	q, err := openQueue()
	if err != nil {
		return nil, err
	}
	w := &Watch{queue: q, dir: dir, dev: uint64(st.Dev), ino: st.Ino}
	fd := q.fd
	// The root is watched through its path, followed; then each entry,
	// a folder before its listing, so that an entry made after the
	// listing was read is an event of a watched folder.
	if _, err := unix.InotifyAddWatch(fd, dir, dirMask&^unix.IN_DONT_FOLLOW); err != nil {
		w.Close()
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	n := 0
	var walk func(string) error
	walk = func(d string) error {
		ents, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if n++; n > MaxEntries {
				return fmt.Errorf("more than %d entries", MaxEntries)
			}
			p := filepath.Join(d, e.Name())
			if e.IsDir() {
				if _, err := unix.InotifyAddWatch(fd, p, dirMask); err != nil {
					return fmt.Errorf("watching %s: %w", p, err)
				}
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			if _, err := unix.InotifyAddWatch(fd, p, fileMask); err != nil {
				return fmt.Errorf("watching %s: %w", p, err)
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Changed reports whether anything in the tree may have changed since
// New began, and whether its path leads to another folder now. Once
// true it stays true.
func (w *Watch) Changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed || w.closed {
		return true
	}
	var buf [4096]byte
	n, err := unix.Read(w.fd, buf[:])
	switch {
	case err == unix.EAGAIN:
	case err != nil || n > 0:
		// Any event, IN_Q_OVERFLOW and IN_IGNORED among them.
		w.changed = true
		return true
	}
	if w.remounted() {
		w.changed = true
		return true
	}
	var st unix.Stat_t
	if err := unix.Stat(w.dir, &st); err != nil || uint64(st.Dev) != w.dev || st.Ino != w.ino {
		w.changed = true
	}
	return w.changed
}

// Close ends the watch.
func (w *Watch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.close()
}
