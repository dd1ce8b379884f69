//go:build unix

package pipeio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pipe is os.Pipe's pair, in non-blocking mode and in the poller, closed
// at the test's end.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestReadWrite: what is written arrives whole and in order, through a
// pipe full many times over; the end of the writer is io.EOF.
func TestReadWrite(t *testing.T) {
	r, w := pipe(t)
	pr, ok := New(r)
	if !ok {
		t.Fatal("os.Pipe's read end was not taken")
	}
	pw, ok := New(w)
	if !ok {
		t.Fatal("os.Pipe's write end was not taken")
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, 16 pipe buffers
	go func() {
		if n, err := pw.Write(want); n != len(want) || err != nil {
			t.Errorf("Write: %d %v", n, err)
		}
		pw.Close()
	}()
	got, err := io.ReadAll(pr)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
	if n, err := pr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("after the end: %d %v", n, err)
	}
}

// TestTryWrite: a full pipe takes what it has room for, and says that
// the rest is still to be written, at once.
func TestTryWrite(t *testing.T) {
	r, w := pipe(t)
	pw, _ := New(w)
	big := bytes.Repeat([]byte("x"), 1<<20)
	n, err, again := pw.TryWrite(big)
	if err != nil || !again || n == 0 || n >= len(big) {
		t.Fatalf("TryWrite of 1 MiB into an empty pipe: %d %v %v", n, err, again)
	}
	if m, err, again := pw.TryWrite([]byte("more")); m != 0 || err != nil || !again {
		t.Errorf("TryWrite into a full pipe: %d %v %v", m, err, again)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if m, err, again := pw.TryWrite([]byte("end\n")); m != 4 || err != nil || again {
		t.Errorf("TryWrite once there is room: %d %v %v", m, err, again)
	}
	r.Close()
	if _, err, _ := pw.TryWrite([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("TryWrite with no reader: %v, want EPIPE", err)
	}
}

// TestCloseEndsRead: closing the file ends a read waiting in the poller,
// with os.File's error, as closing the *os.File does (mcpclient ends a
// session so).
func TestCloseEndsRead(t *testing.T) {
	r, _ := pipe(t)
	pr, _ := New(r)
	done := make(chan error, 1)
	go func() {
		_, err := pr.Read(make([]byte, 8))
		done <- err
	}()
	// The read may not have begun waiting yet; either way it must end.
	pr.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("the read ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("closing did not end the read")
	}
}

// TestCloseEndsWrite: closing ends a write waiting for room.
func TestCloseEndsWrite(t *testing.T) {
	_, w := pipe(t)
	pw, _ := New(w)
	done := make(chan error, 1)
	go func() {
		_, err := pw.Write(bytes.Repeat([]byte("x"), 1<<20))
		done <- err
	}()
	pw.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("the write ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("closing did not end the write")
	}
}

// TestBlockingNotTaken: a descriptor in blocking mode (as os/exec hands
// a child its stdin), or a regular file, is left to os.File.
func TestBlockingNotTaken(t *testing.T) {
	r, w := pipe(t)
	r.Fd() // Fd puts the descriptor in blocking mode
	if _, ok := New(r); ok {
		t.Error("a pipe in blocking mode was taken")
	}
	if got := Reader(r); got != io.Reader(r) {
		t.Error("Reader took a pipe in blocking mode")
	}
	if got := Writer(w); got == io.Writer(w) {
		t.Error("Writer left a non-blocking pipe to os.File")
	}
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := New(f); ok {
		t.Error("a regular file was taken")
	}
	if got := Reader(strings.NewReader("x")); got == nil {
		t.Error("Reader of a non-file")
	}
}

// TestNoAllocs: a read, a write and a try of a ready pipe allocate
// nothing (a proxied call makes four of them).
func TestNoAllocs(t *testing.T) {
	r, w := pipe(t)
	pr, _ := New(r)
	pw, _ := New(w)
	msg := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
	buf := make([]byte, 256)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := pw.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err, again := pw.TryWrite(msg); err != nil || again {
			t.Fatal(err, again)
		}
		for got := 0; got < 2*len(msg); {
			n, err := pr.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a round, want none", allocs)
	}
}
