//go:build unix

package pipeio

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

type rawConn = syscall.RawConn

// newRawConn is f's raw connection when f's descriptor is in
// non-blocking mode.
func newRawConn(f *os.File) (syscall.RawConn, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	flags := 0
	if rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }) != nil || err != nil {
		return nil, false
	}
	return rc, flags&unix.O_NONBLOCK != 0
}

// Read reads into b as os.File's Read does: io.EOF at the end, the
// file's own error once it is closed.
func (p *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := p.sys.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits for data
			}
			n, errno = int(r), e
			return true
		}
	})
	if err != nil {
		// Closed, or a deadline: os.File says it in its words.
		return p.f.Read(b)
	}
	if errno != 0 {
		return 0, &os.PathError{Op: "read", Path: p.name, Err: errno}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes b whole, waiting in the poller while the pipe is full.
func (p *File) Write(b []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := p.sys.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the poller waits for room
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		m, err := p.f.Write(b[n:])
		return n + m, err
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: p.name, Err: errno}
	}
	return n, nil
}

// TryWrite writes as much of b as the descriptor takes without waiting:
// a pipe takes what its buffer has room for. again says that b[n:] is
// still to be written; err is a failed write's.
func (p *File) TryWrite(b []byte) (n int, err error, again bool) {
	var errno syscall.Errno
	cerr := p.sys.Control(func(fd uintptr) {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				again = true
				return
			default:
				errno = e
				return
			}
		}
	})
	if cerr != nil {
		m, err := p.f.Write(b[n:])
		return n + m, err, false
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: p.name, Err: errno}, false
	}
	return n, nil, again
}
