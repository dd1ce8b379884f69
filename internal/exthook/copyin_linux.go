package exthook

import (
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// copyIn copies the claimant's stdin to the hook's until its end, or
// until stop closes. It reads only when there is something to read, so
// that once the run has ended it takes nothing meant for another reader
// of the same stdin (a terminal).
//
// A pipe's stdin (Gemini CLI's) is waited on in Go's poller, through a
// description of the server's own (the pipe opened again through /proc),
// so that no goroutine sits in a blocking system call through the run
// (each one keeps the runtime's monitor waking every 20 us) and the
// description the client shares with Gemini CLI stays as it is
// (blocking). Any other stdin (a socket, which cannot be opened again; a
// terminal or another device, whose opening may do things; a file,
// always ready) is polled by number as before.
func copyIn(dst *os.File, fd int, stop <-chan struct{}) {
	defer dst.Close()
	if src := reopenNonblocking(fd); src != nil {
		defer src.Close()
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-stop:
				_ = src.SetReadDeadline(time.Now())
			case <-done:
			}
		}()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	copyInPolled(dst, fd, stop)
}

// reopenNonblocking is a non-blocking description of its own of the pipe
// fd, in Go's poller, or nil for any other file.
func reopenNonblocking(fd int) *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	// The same pipe, nothing else.
	var now unix.Stat_t
	if unix.Fstat(nfd, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(nfd)
		return nil
	}
	return os.NewFile(uintptr(nfd), "hook-stdin")
}

// copyInPolled is copyIn for a stdin read by number: poll(2) on it and
// on an eventfd that stop wakes.
func copyInPolled(dst *os.File, fd int, stop <-chan struct{}) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	// The waker writes to wake only while it is open: its number is
	// another descriptor's once closed.
	done := make(chan struct{})
	var waker sync.WaitGroup
	waker.Add(1)
	go func() {
		defer waker.Done()
		select {
		case <-stop:
			var one = [8]byte{1}
			_, _ = unix.Write(wake, one[:])
		case <-done:
		}
	}()
	defer func() {
		close(done)
		waker.Wait()
		unix.Close(wake)
	}()
	buf := make([]byte, 32<<10)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if n <= 0 || err != nil {
			return
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}
