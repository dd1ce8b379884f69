//go:build linux && !amd64 && !arm64

package child

// The seccomp filter is written for amd64 and arm64 only.
const (
	auditArch        = 0
	x32SyscallBit    = 0
	SeccompSupported = false
)

// sysMmap: none where there is no filter (32-bit systems name it mmap2).
const sysMmap = ^uint32(0)

var archChmod []chmodCall

// WriteCalls: none where there is no filter.
var WriteCalls []WriteCall

// SysRmdir: none where there is no filter.
const SysRmdir = -1
