//go:build unix

package client

import (
	"bytes"
	"io"
	"testing"
)

// TestExitPipeReadsToTheExit: what the companion wrote before its exit
// is read whole, then the pipe ends, though the write end is still open
// (a child of the companion holds it).
func TestExitPipeReadsToTheExit(t *testing.T) {
	p, w, err := newExitPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	defer w.Close()
	want := bytes.Repeat([]byte("last words\n"), 5000) // 55 KB: most of a pipe
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	// A read waits for more before the exit, and is woken by it.
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(p)
		got <- b
	}()
	p.companionExited()
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("read %d bytes, want the %d written", len(b), len(want))
	}
}

// TestExitPipeBoundedAfterExit: a child of the companion that keeps
// writing after the companion's exit does not hold the reads.
func TestExitPipeBoundedAfterExit(t *testing.T) {
	p, w, err := newExitPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writing := make(chan struct{})
	go func() {
		// It ends when the read end is closed (EPIPE).
		defer close(writing)
		line := bytes.Repeat([]byte("x"), 4096)
		for {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}()
	p.companionExited()
	n, err := io.Copy(io.Discard, p)
	if err != nil || n > drainMax {
		t.Errorf("read %d bytes (bound %d), err %v", n, drainMax, err)
	}
	p.Close()
	<-writing
}
