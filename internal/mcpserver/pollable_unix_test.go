//go:build unix

package mcpserver

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPollable: a pipe in blocking mode, as a client hands gemkit mcp
// its stdin, is read through the poller, and given back in blocking mode
// at the end; a regular file is left as it is.
func TestPollable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A child gets its stdin so: os/exec hands it over in blocking mode.
	fd := int(r.Fd())
	in, restore := pollable(r)
	if in == io.Reader(r) {
		t.Fatal("a blocking pipe was left to blocking reads")
	}
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 {
		t.Error("the pipe is not in non-blocking mode")
	}
	go w.Write([]byte("line\n"))
	buf := make([]byte, 16)
	if n, err := in.Read(buf); err != nil || string(buf[:n]) != "line\n" {
		t.Errorf("read %q %v", buf[:n], err)
	}
	restore()
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Error("the pipe was not given back in blocking mode")
	}
	w.Write([]byte("after\n"))
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "after\n" {
		t.Errorf("the pipe after the session: %q %v", buf[:n], err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, restore := pollable(f); in != io.Reader(f) {
		t.Error("a regular file was taken")
	} else {
		restore()
	}
}

// TestPollableWriter: a pipe in blocking mode, as a client hands gemkit
// mcp its stdout, is written through the poller, and given back in
// blocking mode at the end; a regular file is left as it is.
func TestPollableWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(w.Fd())
	out, restore := pollableWriter(w)
	if out == io.Writer(w) {
		t.Fatal("a blocking pipe was left to blocking writes")
	}
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 {
		t.Error("the pipe is not in non-blocking mode")
	}
	if _, err := out.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "line\n" {
		t.Errorf("read %q %v", buf[:n], err)
	}
	restore()
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Error("the pipe was not given back in blocking mode")
	}
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Errorf("the pipe after the session: %v", err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if out, restore := pollableWriter(f); out != io.Writer(f) {
		t.Error("a regular file was taken")
	} else {
		restore()
	}
}
