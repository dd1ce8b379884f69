// Package proc is gemkit's one place for what the operating system knows
// about processes: a process's parent, command line, working folder and
// environment, its children, memory, CPU time, mappings and cgroups, the
// machine's load and processors, the TCP sockets of this machine and the
// processes that hold them (Linux: /proc and sock_diag; no other package
// parses /proc), the user at the other end of a Unix socket (PeerUID,
// SameUser: no other package reads socket credentials), and the one way gemkit starts a
// child it owns (Own, StartOwned: a process group of its own and, on
// Linux, the parent-death signal), so that nothing gemkit starts outlives
// it.
//
// Where the system cannot be asked (not Linux), the lookups return
// ErrUnsupported and callers fall back to what they do without them.
package proc

import (
	"errors"
	"net/netip"
	"time"
)

// ErrUnsupported is returned by the lookups on systems where gemkit does
// not read processes or sockets this way.
var ErrUnsupported = errors.New("proc: not supported on this system")

// ErrNoSocket is TCPSocket's answer when no socket has those ends.
var ErrNoSocket = errors.New("proc: no such TCP socket")

// Stat is what /proc/PID/stat says of a process that gemkit uses.
type Stat struct {
	// Comm is the command's name (at most 15 bytes, what ps shows in
	// brackets for a kernel thread).
	Comm string
	// State is the one-letter state: R, S, D, Z (zombie), X (dead), …
	State byte
	// PPid is the parent's pid.
	PPid int
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

// TCP states of the kernel (include/net/tcp_states.h), for Query.States.
const (
	TCPEstablished = 1
	TCPListen      = 10
)

// Query selects TCP sockets: States is a mask of 1<<state (0: every
// state); a port that is not 0 must match.
type Query struct {
	States                uint32
	LocalPort, RemotePort uint16
}

// Socket is one TCP socket of this machine as the kernel reports it.
type Socket struct {
	Local, Remote netip.AddrPort
	State         uint8
	UID           uint32
	Inode         uint64
}
