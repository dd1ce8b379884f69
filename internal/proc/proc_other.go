//go:build !linux

package proc

import "net/netip"

// ReadStat is ErrUnsupported here.
func ReadStat(int) (Stat, error) { return Stat{}, ErrUnsupported }

// Parent is ErrUnsupported here.
func Parent(int) (int, error) { return 0, ErrUnsupported }

// Cmdline is ErrUnsupported here.
func Cmdline(int) ([]string, error) { return nil, ErrUnsupported }

// Cwd is ErrUnsupported here.
func Cwd(int) (string, error) { return "", ErrUnsupported }

// Environ is ErrUnsupported here.
func Environ(int) ([]string, error) { return nil, ErrUnsupported }

// UID is ErrUnsupported here.
func UID(int) (uint32, error) { return 0, ErrUnsupported }

// Pids is ErrUnsupported here.
func Pids() ([]int, error) { return nil, ErrUnsupported }

// SocketOwners finds nothing here.
func SocketOwners([]uint64, func(int) bool) map[uint64]int { return map[uint64]int{} }

// TCPSockets is ErrUnsupported here.
func TCPSockets(Query) ([]Socket, error) { return nil, ErrUnsupported }

// TCPSocket is ErrUnsupported here.
func TCPSocket(local, remote netip.AddrPort) (Socket, error) { return Socket{}, ErrUnsupported }
