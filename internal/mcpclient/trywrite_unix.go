//go:build unix

package mcpclient

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// nonBlocking reports whether w is a descriptor in non-blocking mode (a
// pipe as os.Pipe makes it, which the sandbox gives a server's stdin),
// which tryWrite writes without blocking.
func nonBlocking(w io.Writer) bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	flags := 0
	_ = rc.Control(func(fd uintptr) {
		flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0)
	})
	return err == nil && flags&unix.O_NONBLOCK != 0
}

// tryWrite writes msg to w, a descriptor in non-blocking mode
// (nonBlocking), as far as it takes it without blocking: a pipe takes
// what its buffer has room for. again says that msg[n:] is still to be
// written, blocking; err is a failed write's.
func tryWrite(w io.Writer, msg []byte) (n int, err error, again bool) {
	rc, err := w.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err, false
	}
	werr := rc.Write(func(fd uintptr) bool {
		for n < len(msg) {
			m, e := syscall.Write(int(fd), msg[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == nil:
			case errors.Is(e, syscall.EINTR):
			case errors.Is(e, syscall.EAGAIN):
				again = true
				return true
			default:
				err = e
				return true
			}
		}
		return true
	})
	if werr != nil && err == nil {
		err = werr
	}
	return n, err, again && err == nil
}
