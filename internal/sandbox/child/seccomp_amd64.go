//go:build linux

package child

import "golang.org/x/sys/unix"

// auditArch is the seccomp architecture of the syscalls the filter checks.
// x32 syscalls share it and are told apart by a high bit, which the filter
// refuses.
const (
	auditArch        = unix.AUDIT_ARCH_X86_64
	x32SyscallBit    = 0x40000000
	SeccompSupported = true
)

// sysMmap is mmap's number, whose flags the filter checks.
const sysMmap = unix.SYS_MMAP

// archChmod are the chmod calls only this architecture has.
var archChmod = []chmodCall{{unix.SYS_CHMOD, 1}}
