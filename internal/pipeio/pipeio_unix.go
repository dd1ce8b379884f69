//go:build unix

package pipeio

import (
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

type rawConn = syscall.RawConn

// newRawConn is f's raw connection when f's descriptor is in
// non-blocking mode.
func newRawConn(f *os.File) (syscall.RawConn, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	flags := 0
	if rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }) != nil || err != nil {
		return nil, false
	}
	return rc, flags&unix.O_NONBLOCK != 0
}

// ops holds what the raw calls of a File share with the functions the
// poller runs: a function passed to syscall.RawConn and the variables it
// took were made on the heap at each call (a proxied call reads and
// writes four times), so each kind of call has its state and its function
// once, made by init, and a mutex that keeps one call of that kind at a
// time (os.File's own calls of a kind go one at a time too).
type ops struct {
	rmu  sync.Mutex
	read op
	rfn  func(uintptr) bool

	wmu   sync.Mutex
	write op
	wfn   func(uintptr) bool

	tmu sync.Mutex
	try op
	tfn func(uintptr)
}

// op is one raw call's buffer and outcome.
type op struct {
	b     []byte
	n     int
	errno syscall.Errno
	again bool
}

func (o *ops) init(*File) {
	o.rfn = o.read.readFD
	o.wfn = o.write.writeFD
	o.tfn = o.try.tryWriteFD
}

// readFD reads into o.b once the descriptor has data; false when it has
// none yet (the poller waits).
func (o *op) readFD(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.b[0])), uintptr(len(o.b)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = int(r), e
		return true
	}
}

// writeFD writes the rest of o.b; false when the descriptor takes no
// more for now (the poller waits for room).
func (o *op) writeFD(fd uintptr) bool {
	for o.n < len(o.b) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.b[o.n])), uintptr(len(o.b)-o.n))
		switch e {
		case 0:
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// tryWriteFD writes what of o.b the descriptor takes now.
func (o *op) tryWriteFD(fd uintptr) {
	o.again = !o.writeFD(fd)
}

// Read reads into b as os.File's Read does: io.EOF at the end, the
// file's own error once it is closed.
func (p *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	o := &p.ops
	o.rmu.Lock()
	o.read = op{b: b}
	err := p.sys.Read(o.rfn)
	n, errno := o.read.n, o.read.errno
	o.read = op{}
	o.rmu.Unlock()
	if err != nil {
		// Closed, or a deadline: os.File says it in its words.
		return p.f.Read(b)
	}
	if errno != 0 {
		return 0, &os.PathError{Op: "read", Path: p.name, Err: errno}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes b whole, waiting in the poller while the pipe is full.
func (p *File) Write(b []byte) (int, error) {
	o := &p.ops
	o.wmu.Lock()
	o.write = op{b: b}
	err := p.sys.Write(o.wfn)
	n, errno := o.write.n, o.write.errno
	o.write = op{}
	o.wmu.Unlock()
	if err != nil {
		m, err := p.f.Write(b[n:])
		return n + m, err
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: p.name, Err: errno}
	}
	return n, nil
}

// TryWrite writes as much of b as the descriptor takes without waiting:
// a pipe takes what its buffer has room for. again says that b[n:] is
// still to be written; err is a failed write's.
func (p *File) TryWrite(b []byte) (n int, err error, again bool) {
	o := &p.ops
	o.tmu.Lock()
	o.try = op{b: b}
	cerr := p.sys.Control(o.tfn)
	n, errno, again := o.try.n, o.try.errno, o.try.again
	o.try = op{}
	o.tmu.Unlock()
	if cerr != nil {
		m, err := p.f.Write(b[n:])
		return n + m, err, false
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: p.name, Err: errno}, false
	}
	return n, nil, again
}
