// Package procstat reads /proc/PID/stat, the part of package proc that
// `gemkit extensions hook`'s warm client (package hookclient) needs
// before the rest of gemkit initializes. It imports only early parts of
// the standard library: Go initializes a package once all it imports is,
// and package proc's imports (net, x/sys/unix) come late, after most of
// the program's dependencies. Package proc re-exports what is here.
package procstat

import (
	"errors"
	"time"
)

// ErrUnsupported is returned where the system cannot be asked (not
// Linux).
var ErrUnsupported = errors.New("proc: not supported on this system")

// Stat is what /proc/PID/stat says of a process that gemkit uses.
type Stat struct {
	// Comm is the command's name (at most 15 bytes, what ps shows in
	// brackets for a kernel thread).
	Comm string
	// State is the one-letter state: R, S, D, Z (zombie), X (dead), …
	State byte
	// PPid is the parent's pid.
	PPid int
	// Tty is the device number of its controlling terminal, 0 for none.
	Tty int
	// Start is when it started, in clock ticks after the boot: with the
	// pid, it names one process for good.
	Start uint64
	// CPU is its user and system time and its reaped children's (in
	// clock ticks: 10 ms steps).
	CPU time.Duration
}

// Running reports whether the state is that of a process that has not
// ended (neither a zombie nor dead).
func (s Stat) Running() bool { return s.State != 'Z' && s.State != 'X' }
