package gemkittest

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// waitExit waits up to within for pids to end on their pidfds, reporting
// false where the kernel has none (before Linux 5.3).
func waitExit(pids []int, within time.Duration) bool {
	var fds []unix.PollFd
	defer func() {
		for _, f := range fds {
			unix.Close(int(f.Fd))
		}
	}()
	for _, p := range pids {
		fd, err := unix.PidfdOpen(p, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // gone already
		}
		if err != nil {
			return false
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	deadline := time.Now().Add(within)
	for pending := fds; len(pending) > 0; {
		ms := time.Until(deadline).Milliseconds()
		if ms <= 0 {
			break
		}
		if _, err := unix.Poll(pending, int(min(ms, 1<<30))); err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		var still []unix.PollFd
		for _, f := range pending {
			if f.Revents == 0 {
				still = append(still, f)
			}
		}
		pending = still
	}
	return true
}
