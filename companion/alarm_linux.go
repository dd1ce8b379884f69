package companion

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// newAlarm returns an alarm on a Linux timerfd: the kernel's
// high-resolution timer makes the file readable at the deadline and the
// runtime's poller wakes the reading goroutine at once, some tenths of a
// millisecond sooner than a runtime timer would fire. Without a timerfd it
// falls back to a runtime timer.
func newAlarm(f func()) alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newRuntimeAlarm(f)
	}
	// A non-blocking descriptor: reads go through the runtime's poller.
	a := &timerfdAlarm{file: os.NewFile(uintptr(fd), "debounce timerfd")}
	go a.run(f)
	return a
}

type timerfdAlarm struct{ file *os.File }

// run calls f each time the timer expires, until Stop closes the file.
func (a *timerfdAlarm) run(f func()) {
	var expirations [8]byte
	for {
		if _, err := a.file.Read(expirations[:]); err != nil {
			return
		}
		f()
	}
}

// Reset arms the timer d from now; an expiry not yet read is forgotten,
// as the kernel clears it when the timer is set.
func (a *timerfdAlarm) Reset(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	a.control(func(fd int) { _ = unix.TimerfdSettime(fd, 0, &spec, nil) })
}

// Stop ends the alarm: the pending deadline is dropped and run returns.
func (a *timerfdAlarm) Stop() { _ = a.file.Close() }

// control runs op on the descriptor while the file is open, so that a
// Reset racing with Stop never touches a closed (or reused) descriptor.
func (a *timerfdAlarm) control(op func(fd int)) {
	rc, err := a.file.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { op(int(fd)) })
}
