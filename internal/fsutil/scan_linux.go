package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ScanDir is a folder of a Scan, open while its entries are visited.
type ScanDir struct {
	fd   int
	dir  string // its path, for errors
	refs atomic.Int32
	own  bool // the scan opened it, and closes it
}

// Path is the path of the entry name of the folder, for messages.
func (d *ScanDir) Path(name string) string { return d.dir + "/" + name }

// OpenStat opens the regular file name of the folder for reading, as
// Root.OpenStat does: not through a link, without blocking on a FIFO,
// and anything not regular refused with ErrNotRegular. It returns the
// descriptor's fstat.
func (d *ScanDir) OpenStat(name string) (*os.File, ScanStat, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|openReadFlags, 0)
	if err != nil {
		return nil, ScanStat{}, &fs.PathError{Op: "open", Path: d.Path(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, ScanStat{}, &fs.PathError{Op: "stat", Path: d.Path(name), Err: err}
	}
	s := scanStatOf(&st)
	if !s.Mode.IsRegular() {
		unix.Close(fd)
		return nil, ScanStat{}, &fs.PathError{Op: "open", Path: d.Path(name), Err: ErrNotRegular}
	}
	return os.NewFile(uintptr(fd), d.Path(name)), s, nil
}

// Readlink is the target of the link name of the folder, as written.
func (d *ScanDir) Readlink(name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: d.Path(name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size >= 1<<16 {
			return "", &fs.PathError{Op: "readlink", Path: d.Path(name), Err: syscall.ENAMETOOLONG}
		}
	}
}

func (d *ScanDir) release() {
	if d.refs.Add(-1) == 0 && d.own {
		unix.Close(d.fd)
	}
}

// scanStatOf is st as Scan tells it, its mode as os.Lstat gives it.
func scanStatOf(st *unix.Stat_t) ScanStat {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return ScanStat{Mode: m, Size: st.Size, Dev: uint64(st.Dev), Ino: st.Ino, Nlink: uint64(st.Nlink),
		Mtim: st.Mtim.Nano(), Ctim: st.Ctim.Nano()}
}

// scanJob is a folder to visit: the entry base of parent, which its
// listing described as listed.
type scanJob struct {
	start  *ScanDir // the folder scanned, for the first job
	parent *ScanDir
	base   string
	rel    string
	depth  int
	listed ScanStat
}

type scanner struct {
	fn ScanFunc
}

func (r *Root) scan(workers int, fn ScanFunc) error {
	top, err := r.r.Open(".")
	if err != nil {
		return r.wrap("open", ".", err)
	}
	defer top.Close()
	var fd int
	if err := withFd(top, func(f int) { fd = f }); err != nil {
		return err
	}
	start := &ScanDir{fd: fd, dir: r.dir}
	start.refs.Store(1)
	s := &scanner{fn: fn}
	bufs := make([][]byte, max(workers, 1))
	left, err := lifoWork(workers, []scanJob{{start: start}}, func(j scanJob, w int) ([]scanJob, error) {
		if bufs[w] == nil {
			bufs[w] = make([]byte, 32<<10)
		}
		return s.visit(j, bufs[w])
	})
	for _, j := range left {
		if j.parent != nil {
			j.parent.release()
		}
	}
	if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// withFd runs f with the descriptor of file, without making it blocking
// (os.File.Fd would).
func withFd(file *os.File, f func(int)) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { f(int(fd)) })
}

// visit opens the job's folder, calls fn for each of its entries and
// returns the folders in it to visit, each holding a reference to it.
func (s *scanner) visit(j scanJob, buf []byte) ([]scanJob, error) {
	d := j.start
	if d == nil {
		var err error
		d, err = openListed(j.parent, j.base, j.listed)
		j.parent.release()
		if err != nil {
			return nil, err
		}
	}
	defer d.release()
	if j.depth > maxWalkDepth {
		return nil, &fs.PathError{Op: "scan", Path: d.dir, Err: fmt.Errorf("more than %d folders deep", maxWalkDepth)}
	}
	var children []scanJob
	var st unix.Stat_t
	prefix := []byte(nil)
	if j.rel != "" {
		prefix = append([]byte(j.rel), '/')
	}
	for {
		n, err := unix.Getdents(d.fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return children, &fs.PathError{Op: "readdir", Path: d.dir, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino, off, reclen, type, name.
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 20 || reclen > len(b) {
				return children, &fs.PathError{Op: "readdir", Path: d.dir, Err: errors.New("a malformed entry")}
			}
			raw := b[19:reclen]
			b = b[reclen:]
			l := 0
			for l < len(raw) && raw[l] != 0 {
				l++
			}
			if l == 1 && raw[0] == '.' || l == 2 && raw[0] == '.' && raw[1] == '.' || l == len(raw) {
				continue
			}
			if err := fstatatName(d.fd, raw[:l+1], &st); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // removed since the listing, as a later listing would show
				}
				return children, &fs.PathError{Op: "lstat", Path: d.Path(string(raw[:l])), Err: err}
			}
			ss := scanStatOf(&st)
			// The entry's path, made once; its name is the end of it.
			relb := make([]byte, len(prefix)+l)
			copy(relb[copy(relb, prefix):], raw[:l])
			rel := unsafe.String(unsafe.SliceData(relb), len(relb))
			name := rel[len(prefix):]
			err := s.fn(d, rel, &ss)
			switch {
			case errors.Is(err, fs.SkipDir) && ss.Mode.IsDir():
				continue
			case err != nil:
				return children, err
			case !ss.Mode.IsDir():
				continue
			}
			d.refs.Add(1)
			children = append(children, scanJob{parent: d, base: name, rel: rel, depth: j.depth + 1, listed: ss})
		}
	}
	return children, nil
}

// openListed opens the folder base of parent, not through a link, and
// checks that it is the folder its listing described.
func openListed(parent *ScanDir, base string, listed ScanStat) (*ScanDir, error) {
	fd, err := unix.Openat(parent.fd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = ErrChanged
		}
		return nil, &fs.PathError{Op: "open", Path: parent.Path(base), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != listed.Dev || st.Ino != listed.Ino {
		unix.Close(fd)
		if err == nil {
			err = ErrChanged
		}
		return nil, &fs.PathError{Op: "open", Path: parent.Path(base), Err: err}
	}
	d := &ScanDir{fd: fd, dir: path.Join(parent.dir, base), own: true}
	d.refs.Store(1)
	return d, nil
}

// scanStatOfInfo is what Scan tells of fi, an os.Lstat's or an fstat's.
func scanStatOfInfo(fi fs.FileInfo) ScanStat {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return scanStatOf((*unix.Stat_t)(unsafe.Pointer(st)))
	}
	return ScanStat{Mode: fi.Mode(), Size: fi.Size(), Nlink: 1, Mtim: fi.ModTime().UnixNano()}
}
