package fsutil

import (
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxTreeWatches bounds the folders of one tree watched with inotify,
// whose watches every program of the user shares.
const maxTreeWatches = 1024

// WatchTree calls check whenever what the tree at dir holds may have
// changed (a file written, made or moved in), until done is closed or
// check says it is done (true): once at the start, then at every batch
// of inotify events of dir and its folders (those made since included),
// one call at a time; where inotify cannot watch (no instance, or the
// watches ran out), once a second. It watches, never reads: what a
// folder holds is only listed, and a link is never entered.
func WatchTree(dir string, done <-chan struct{}, check func() bool) {
	if check() {
		return
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		poll(done, check)
		return
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	w := &treeWatch{fd: fd, watched: map[int32]string{}}
	w.addTree(dir, 0)
	// The watches are in place: what was written before them is measured
	// once more.
	if check() {
		return
	}
	if w.full {
		poll(done, check)
		return
	}
	events := make(chan bool, 1)
	go w.read(f, events)
	for {
		select {
		case <-done:
			return
		case _, ok := <-events:
			if !ok {
				poll(done, check)
				return
			}
			if check() {
				return
			}
		}
	}
}

// treeWatch is the inotify watches of one WatchTree: the folder of each
// watch, and whether some folder could not be watched (full), when the
// tree is polled instead. Set up by WatchTree, then grown by read alone.
type treeWatch struct {
	fd      int
	watched map[int32]string
	full    bool
}

// treeWatchMask is what a watched folder reports: a file written, made
// or moved in.
const treeWatchMask = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE

// add watches the folder d, without following it if it is a link.
func (w *treeWatch) add(d string) {
	if len(w.watched) >= maxTreeWatches {
		w.full = true
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, d, treeWatchMask|unix.IN_DONT_FOLLOW|unix.IN_EXCL_UNLINK)
	if err != nil {
		w.full = w.full || err == unix.ENOSPC
		return
	}
	w.watched[int32(wd)] = d
}

// addTree watches d and the folders in it, down to a bound on depth.
func (w *treeWatch) addTree(d string, depth int) {
	w.add(d)
	if depth > 32 {
		return
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsDir() {
			w.addTree(filepath.Join(d, e.Name()), depth+1)
		}
	}
}

// read sends on events (without blocking: one pending is enough) at each
// batch of events of f, watching the folders made or moved in as they
// come; it closes events once f cannot be read.
func (w *treeWatch) read(f *os.File, events chan<- bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			close(events)
			return
		}
		grew := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := eventName(buf[off+unix.SizeofInotifyEvent:], ev.Len)
			if ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && name != "" {
				if d, ok := w.watched[ev.Wd]; ok {
					w.addTree(filepath.Join(d, name), 1)
				}
			}
			grew = true
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if grew {
			select {
			case events <- true:
			default:
			}
		}
	}
}

// eventName is the name of an inotify event whose name field (n bytes,
// NUL-padded) starts rest; "" for an event of the watched folder itself.
func eventName(rest []byte, n uint32) string {
	if n == 0 {
		return ""
	}
	raw := rest[:n]
	for i, c := range raw {
		if c == 0 {
			raw = raw[:i]
			break
		}
	}
	return string(raw)
}
