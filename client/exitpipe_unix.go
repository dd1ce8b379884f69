//go:build unix

package client

import (
	"io"
	"os"
	"syscall"
)

// exitEndsReads says that the companion's exit ends the reads of its
// pipes here (their deadline wakes a read, and drain reads what is left).
const exitEndsReads = true

// drain reads what the pipe holds without waiting for more: io.EOF when
// it holds nothing. The read is a raw one, as the deadline that woke the
// last read refuses the poller's.
func (p *exitPipe) drain(b []byte) (int, error) {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			n, rerr = syscall.Read(int(fd), b)
			if rerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return 0, err // closed
	}
	switch {
	case rerr == syscall.EAGAIN:
		return 0, io.EOF
	case rerr != nil:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: rerr}
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
}
