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
	const mask = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE
	watched := map[int32]string{}
	full := false
	add := func(d string) {
		if len(watched) >= maxTreeWatches {
			full = true
			return
		}
		wd, err := unix.InotifyAddWatch(fd, d, mask|unix.IN_DONT_FOLLOW|unix.IN_EXCL_UNLINK)
		if err != nil {
			full = full || err == unix.ENOSPC
			return
		}
		watched[int32(wd)] = d
	}
	var addTree func(d string, depth int)
	addTree = func(d string, depth int) {
		add(d)
		if depth > 32 {
			return
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Type().IsDir() {
				addTree(filepath.Join(d, e.Name()), depth+1)
			}
		}
	}
	addTree(dir, 0)
	// The watches are in place: what was written before them is measured
	// once more.
	if check() {
		return
	}
	if full {
		poll(done, check)
		return
	}
	events := make(chan bool, 1)
	go func() {
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
				name := ""
				if ev.Len > 0 {
					raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
					for i, c := range raw {
						if c == 0 {
							raw = raw[:i]
							break
						}
					}
					name = string(raw)
				}
				if ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && name != "" {
					if d, ok := watched[ev.Wd]; ok {
						addTree(filepath.Join(d, name), 1)
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
	}()
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
