//go:build !linux

package proc

import (
	"context"
	"net/netip"
	"time"
)

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

// LoadAverage is ErrUnsupported here.
func LoadAverage() (string, error) { return "", ErrUnsupported }

// CPUs is ErrUnsupported here.
func CPUs() (int, error) { return 0, ErrUnsupported }

// Exe is ErrUnsupported here.
func Exe(int) (string, error) { return "", ErrUnsupported }

// Children is ErrUnsupported here.
func Children(int) ([]int, error) { return nil, ErrUnsupported }

// Tree is pid alone here.
func Tree(pid int) []int { return []int{pid} }

// StatusBytes is ErrUnsupported here.
func StatusBytes(int, string) (int64, error) { return 0, ErrUnsupported }

// MemoryOf is ErrUnsupported here.
func MemoryOf(int) (Memory, error) { return Memory{}, ErrUnsupported }

// ThreadGroup is ErrUnsupported here.
func ThreadGroup(int) (int, error) { return 0, ErrUnsupported }

// Umask is ErrUnsupported here.
func Umask(int) (uint32, error) { return 0, ErrUnsupported }

// CPUTime is ErrUnsupported here.
func CPUTime(int) (time.Duration, error) { return 0, ErrUnsupported }

// Mappings is ErrUnsupported here.
func Mappings(int) ([]Mapping, error) { return nil, ErrUnsupported }

// Cgroups is ErrUnsupported here.
func Cgroups(int) (map[string]string, error) { return nil, ErrUnsupported }

// CgroupMounts is ErrUnsupported here.
func CgroupMounts(int, ...string) (string, map[string]string, error) {
	return "", map[string]string{}, ErrUnsupported
}

// WaitExit is ErrUnsupported here.
func WaitExit(context.Context, int) error { return ErrUnsupported }

// VoluntarySwitches is unsupported here.
func VoluntarySwitches(int) (int, error) { return 0, ErrUnsupported }
