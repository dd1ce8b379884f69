package treewatch

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// queue is what both watches read: an inotify queue and the mount
// table of this process's namespace, whose poll says POLLPRI once a
// mount came or went (a path can then lead elsewhere with no event).
type queue struct {
	fd, mounts int
	closed     bool
}

func openQueue() (queue, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return queue{fd: -1, mounts: -1}, fmt.Errorf("inotify: %w", err)
	}
	m, err := unix.Open("/proc/self/mounts", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return queue{fd: -1, mounts: -1}, fmt.Errorf("the mount table: %w", err)
	}
	return queue{fd: fd, mounts: m}, nil
}

// remounted says whether the mount table changed since openQueue.
func (q *queue) remounted() bool {
	pfd := []unix.PollFd{{Fd: int32(q.mounts), Events: unix.POLLPRI}}
	k, err := unix.Poll(pfd, 0)
	return err != nil || k > 0
}

// close ends the queue once; the caller holds its watch's lock.
func (q *queue) close() error {
	if q.closed {
		return nil
	}
	q.closed = true
	unix.Close(q.mounts)
	return unix.Close(q.fd)
}
