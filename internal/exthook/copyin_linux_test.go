package exthook

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyIn: the claimant's stdin is copied to the hook's until its
// end, or until stop; once stopped, nothing more is read from it (what
// comes after is left to another reader), and the description the
// client shares with Gemini CLI is left blocking. A pipe's is waited on
// in Go's poller through a description of its own; a socket's (which
// cannot be opened again) by poll(2), with the same behaviour.
func TestCopyIn(t *testing.T) {
	pipe := func(t *testing.T) (int, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		fd, err := unix.Dup(int(r.Fd())) // blocking, as a client's
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd, w
	}
	socket := func(t *testing.T) (int, *os.File) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		w := os.NewFile(uintptr(fds[1]), "w")
		t.Cleanup(func() { unix.Close(fds[0]); w.Close() })
		return fds[0], w
	}
	for name, mk := range map[string]func(t *testing.T) (int, *os.File){"pipe": pipe, "socket": socket} {
		t.Run(name+": to its end", func(t *testing.T) {
			fd, w := mk(t)
			if f := reopenNonblocking(fd); (f != nil) != (name == "pipe") {
				t.Errorf("waited on in the poller: %v", f != nil)
			} else if f != nil {
				f.Close()
			}
			hr, hw, _ := os.Pipe()
			defer hr.Close()
			done := make(chan struct{})
			go func() { defer close(done); copyIn(hw, fd, make(chan struct{})) }()
			w.WriteString("input")
			w.Close()
			got, _ := io.ReadAll(hr)
			<-done
			if string(got) != "input" {
				t.Errorf("copied %q", got)
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
				t.Errorf("the client's description: flags %#x, %v", fl, err)
			}
		})
		t.Run(name+": stopped", func(t *testing.T) {
			fd, w := mk(t)
			hr, hw, _ := os.Pipe()
			defer hr.Close()
			stop, done := make(chan struct{}), make(chan struct{})
			go func() { defer close(done); copyIn(hw, fd, stop) }()
			w.WriteString("first")
			buf := make([]byte, 5)
			if _, err := io.ReadFull(hr, buf); err != nil || string(buf) != "first" {
				t.Fatalf("copied %q, %v", buf, err)
			}
			close(stop)
			<-done
			w.WriteString("later")
			n, err := unix.Read(fd, buf)
			if err != nil || string(buf[:n]) != "later" {
				t.Errorf("what came after the stop: %q, %v", buf[:n], err)
			}
		})
	}
}
