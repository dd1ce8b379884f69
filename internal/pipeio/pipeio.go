// Package pipeio reads and writes the pipes of a stdio proxy (gemkit mcp
// between its client and an extension's MCP server) without waking the
// Go runtime's monitor at each message.
//
// A read or write through *os.File enters the runtime's system-call
// state, and the first system call after the process was idle wakes the
// runtime's monitor thread (sysmon), asleep while every processor is
// idle, which then polls every 20 µs until the process is idle again. A
// proxied call crosses the proxy twice, each time after an idle moment:
// on this project's paravirtualised 2-core machine each such wake was a
// cross-CPU wakeup of 9 to 13 µs on the call's path (perf trace of
// gemkit mcp, bench/extmcp), and the monitor's polls then took the
// other CPU from the server answering the call. The reads and writes
// here are of descriptors in non-blocking mode, in Go's poller: each
// system call returns at once, so it is made as a raw one, which the
// runtime does not account as a system call, and a descriptor that is
// not ready is waited for in the poller as *os.File waits for it.
package pipeio

import (
	"io"
	"os"
)

// File reads and writes a descriptor in non-blocking mode (a pipe as
// os.Pipe makes it, a socket) through Go's poller with raw system calls.
type File struct {
	f *os.File
	// name is f's name, for errors.
	name string
	sys  rawConn
	ops  ops // the state of the raw calls under way, reused
}

// New returns a File of f, which must be in non-blocking mode and in the
// poller (os.Pipe's, or os.NewFile's of a non-blocking descriptor);
// otherwise ok is false and f is to be used as it is.
func New(f *os.File) (p *File, ok bool) {
	rc, ok := newRawConn(f)
	if !ok {
		return nil, false
	}
	p = &File{f: f, name: f.Name(), sys: rc}
	p.ops.init(p)
	return p, true
}

// Reader is r as a *File when it is a file New takes, else r.
func Reader(r io.Reader) io.Reader {
	if f, ok := r.(*os.File); ok {
		if p, ok := New(f); ok {
			return p
		}
	}
	return r
}

// Writer is w as a *File when it is a file New takes, else w.
func Writer(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if p, ok := New(f); ok {
			return p
		}
	}
	return w
}

// File is the file read and written.
func (p *File) File() *os.File { return p.f }

// Close closes the file; a read or write waiting in the poller ends.
func (p *File) Close() error { return p.f.Close() }
