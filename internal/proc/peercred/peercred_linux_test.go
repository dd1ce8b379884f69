package peercred

import (
	"os"
	"syscall"
	"testing"
)

// TestFD: both ends of a socket pair made by this process see its user
// and its pid; a descriptor that is no socket is an error, and -1s.
func TestFD(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	for _, fd := range fds {
		if c, err := FD(fd); err != nil || c != (Cred{UID: os.Getuid(), PID: os.Getpid()}) {
			t.Errorf("FD(%d) = %+v, %v; want this process's", fd, c, err)
		}
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if c, err := FD(int(f.Fd())); err == nil || c != (Cred{UID: -1, PID: -1}) {
		t.Errorf("FD of %s = %+v, %v; want an error", os.DevNull, c, err)
	}
}
