//go:build unix

package mcpserver

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/pipeio"
)

// pollable returns, for in a pipe or a socket (as a client hands gemkit
// mcp its stdin) in blocking mode, a reader of the same stream that Go's
// poller waits on, read with pipeio's raw system calls, and the function
// that puts the stream back in blocking mode; any other in comes back as
// it is. A blocking read holds a thread, and its processor, in the
// system call between two messages: whenever the other processor was
// busy the runtime's monitor took that one back, woke another thread for
// it, and kept waking itself every 20 µs; that cost a forwarded call
// more than its own work (bench/extmcp). A terminal is left alone: the
// shell shares its mode, and one gemkit could not put back (a crash)
// would break the shell's next read.
func pollable(in io.Reader) (io.Reader, func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	pf, restore, ok := nonBlocking(f)
	if !ok {
		return in, func() {}
	}
	return pipeio.Reader(pf), restore
}

// pollableWriter is pollable for out, the client's stdout: the answers
// of forwarded calls are written with pipeio's raw system calls, each
// waiting in the poller when the client does not read.
func pollableWriter(out io.Writer) (io.Writer, func()) {
	f, ok := out.(*os.File)
	if !ok {
		return out, func() {}
	}
	pf, restore, ok := nonBlocking(f)
	if !ok {
		return out, func() {}
	}
	return pipeio.Writer(pf), restore
}

// nonBlocking is f, a pipe or a socket, in non-blocking mode and in Go's
// poller, and the function that puts it back as it was; ok is false for
// any other f.
func nonBlocking(f *os.File) (pf *os.File, restore func(), ok bool) {
	// The descriptor, without Fd, which would put a pollable one in
	// blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	fd := -1
	_ = rc.Control(func(d uintptr) { fd = int(d) })
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil || (st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK) {
		return nil, nil, false
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, nil, false
	}
	if fl&unix.O_NONBLOCK != 0 {
		// Already in the poller (os.Stdin took it so).
		return f, func() {}, true
	}
	// A descriptor of its own: the *os.File closes it when it is
	// collected, which must not close the process's stdin or stdout.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, false
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil, false
	}
	// os.NewFile takes a descriptor in non-blocking mode into the poller.
	pf = os.NewFile(uintptr(dup), f.Name())
	return pf, func() {
		// The mode belongs to the open file, which the client may share:
		// it gets it back as it gave it.
		if rc, err := pf.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
		}
		pf.Close()
	}, true
}
