//go:build linux

package child

import "golang.org/x/sys/unix"

// auditArch is the seccomp architecture of the syscalls the filter checks.
const (
	auditArch        = unix.AUDIT_ARCH_AARCH64
	x32SyscallBit    = 0
	SeccompSupported = true
)

// sysMmap is mmap's number, whose flags the filter checks.
const sysMmap = unix.SYS_MMAP

// archChmod are the chmod calls only this architecture has: none.
var archChmod []chmodCall
