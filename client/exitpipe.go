package client

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/pipeio"
)

// exitPipe is gemkit's end of a pipe a stdio companion writes (its stdout
// or stderr), read until the companion's exit and no longer: once it has
// exited, all it wrote is in the pipe, so a read that finds the pipe
// empty then ends (io.EOF) even while a process the companion started
// keeps the other end open. Its last words are read, never cut off: the
// answer to initialize with which gemkit ide bridge says why it cannot
// relay, or a line on stderr.
//
// exec.Cmd's own pipes are closed by Wait at the exit (StdoutPipe), or
// copied until a WaitDelay (a Stderr that is no file), so what was still
// in them could be lost to whichever came first.
type exitPipe struct {
	f      *os.File
	r      io.Reader // f, through pipeio's raw calls when it can
	exited atomic.Bool
	// drained counts what was read after the exit, up to drainMax:
	// more comes only from a process the companion started that keeps
	// writing, which must not hold the reads either.
	drained int
}

// drainMax bounds what is read of a pipe after the companion's exit: as
// much as a pipe holds (64 KiB by default on Linux, at most
// /proc/sys/fs/pipe-max-size, 1 MiB by default).
const drainMax = 1 << 20

// newExitPipe returns gemkit's end and the end for the companion, which
// the caller closes once the companion has started.
func newExitPipe() (*exitPipe, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &exitPipe{f: r, r: pipeio.Reader(r)}, w, nil
}

// companionExited says that the companion has exited: a read waiting for
// more wakes and ends once the pipe is empty. Where a pipe has no
// deadlines it is closed instead (what it held is lost, as with exec's
// pipes).
func (p *exitPipe) companionExited() {
	p.exited.Store(true)
	// A deadline in the past wakes the read under way; set after the
	// flag, so a read that has not seen the flag yet does not wait.
	if err := p.f.SetReadDeadline(time.Unix(1, 0)); err != nil {
		_ = p.f.Close()
	}
}

func (p *exitPipe) Read(b []byte) (int, error) {
	if !p.exited.Load() {
		n, err := p.r.Read(b)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
	}
	if p.drained >= drainMax {
		return 0, io.EOF
	}
	if len(b) > drainMax-p.drained {
		b = b[:drainMax-p.drained]
	}
	n, err := p.drain(b)
	p.drained += n
	return n, err
}

// Close closes gemkit's end.
func (p *exitPipe) Close() error { return p.f.Close() }
