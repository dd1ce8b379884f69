//go:build !unix

package pipeio

import "os"

type rawConn struct{}

func newRawConn(*os.File) (rawConn, bool) { return rawConn{}, false }

// ops is the raw calls' state, which only Unix has.
type ops struct{}

func (*ops) init(*File) {}

// Read reads as the file does (New takes no file here).
func (p *File) Read(b []byte) (int, error) { return p.f.Read(b) }

// Write writes as the file does.
func (p *File) Write(b []byte) (int, error) { return p.f.Write(b) }

// TryWrite writes b whole, as the file does.
func (p *File) TryWrite(b []byte) (n int, err error, again bool) {
	n, err = p.f.Write(b)
	return n, err, false
}
