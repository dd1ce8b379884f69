package proc

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit returns nil once process pid has ended (at once when there is
// no such process), or ctx's error once ctx ends first. It waits on the
// process's pidfd, which the kernel makes readable as the process exits,
// whoever its parent is: the runtime's poller wakes the caller then, and
// nothing runs meanwhile, where a poll of kill(pid, 0) would wake the
// process a few times a second for as long as it waits. Any other
// error means it cannot wait this way (ErrUnsupported: the kernel has no
// pidfd, before Linux 5.3, or refuses one), and the caller polls instead.
func WaitExit(ctx context.Context, pid int) error {
	if pid <= 0 {
		return errors.New("proc: WaitExit: no process " + strconv.Itoa(pid))
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.EINVAL) { // before Linux 5.10: no PIDFD_NONBLOCK
		fd, err = unix.PidfdOpen(pid, 0)
		if err == nil {
			err = unix.SetNonblock(fd, true)
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case err != nil:
		return ErrUnsupported
	}
	// A non-blocking descriptor: os.NewFile hands it to the runtime's
	// poller, and the raw read below parks until it is readable.
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		return ErrUnsupported // the runtime's poller does not take the descriptor
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	var pollErr error
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(p, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				pollErr = err // not an end: the caller polls instead
			}
			return err != nil || n > 0
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if pollErr != nil {
		return ErrUnsupported
	}
	return err
}
