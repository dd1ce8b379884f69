package exthook

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSessionEnded: a session's Ended closes once its process has
// ended, and not before (its pidfd waited on in Go's poller).
func TestSessionEnded(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open (Linux 5.3 and later; CI's kernel is 6.18): %v", err)
	}
	s := &Session{Pid: cmd.Process.Pid, FD: os.NewFile(uintptr(fd), "pidfd")}
	defer s.FD.Close()
	ended := s.Ended()
	select {
	case <-ended:
		t.Fatal("ended while its process runs")
	default:
	}
	if f := pollerPidfd(s.FD); f == nil {
		t.Error("the pidfd is not waited on in the poller")
	} else {
		f.Close()
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("not ended a minute after its process")
	}
}
