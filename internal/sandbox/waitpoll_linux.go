package sandbox

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the child pid has exited (it is this process's
// child, not reaped yet: its pid is not another's meanwhile), waiting
// on a pidfd of it in Go's poller. exec.Cmd.Wait's own wait is a
// blocking waitid(2) on its thread, which keeps the runtime's monitor
// waking every 20 us while the tool runs; after this it reaps at once.
// Where a pidfd cannot be had or polled, it returns at once, and the
// caller's wait blocks as before.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err != unix.EINTR && (err != nil || n > 0)
	})
}

// pollerFile is a copy of fd, non-blocking, as a file in Go's poller,
// and its number, or nil where it cannot be one (fd left blocking). The
// caller closes fd once it has the file: the file owns its copy.
func pollerFile(fd int, name string) (*os.File, int) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, -1
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, -1
	}
	f := os.NewFile(uintptr(nfd), name)
	// A deadline is refused (os.ErrNoDeadline) by a file not in it.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		_ = unix.SetNonblock(fd, false) // the description is shared
		return nil, -1
	}
	return f, nfd
}

// watchPolled calls handle each time f, in Go's poller, is readable
// (poll(2) says POLLIN), until handle says false, f hangs up (POLLHUP
// without POLLIN: every process that could notify is gone), or its read
// deadline passes (the watch was ended). It says false when the poller
// could not wait on f at all.
func watchPolled(f *os.File, handle func() bool) bool {
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	for {
		var revents int16
		err := raw.Read(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 0); err != nil || n == 0 {
				return false
			}
			revents = pfd[0].Revents
			return true
		})
		if err != nil {
			return errors.Is(err, os.ErrDeadlineExceeded)
		}
		if revents&unix.POLLIN == 0 || !handle() {
			return true
		}
	}
}
