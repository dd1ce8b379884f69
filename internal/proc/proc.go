// Package proc is gemkit's one place for what the operating system knows
// about processes: a process's parent, command line, working folder and
// environment, its children, memory, CPU time, mappings and cgroups, the
// machine's load and processors, the TCP sockets of this machine and the
// processes that hold them (Linux: /proc and sock_diag; no other package
// parses /proc), the user at the other end of a Unix socket (PeerUID,
// Peer, SameUser, read by peercred, which hookclient's early init uses
// too: no other package reads socket credentials), and the one way gemkit starts a
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

	"github.com/gemkit/gemkit/internal/proc/procstat"
)

// ErrUnsupported is returned by the lookups on systems where gemkit does
// not read processes or sockets this way.
var ErrUnsupported = procstat.ErrUnsupported

// ErrNoSocket is TCPSocket's answer when no socket has those ends.
var ErrNoSocket = errors.New("proc: no such TCP socket")

// Stat is what /proc/PID/stat says of a process that gemkit uses
// (package procstat, which the warm hook's client reads it with).
type Stat = procstat.Stat

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
