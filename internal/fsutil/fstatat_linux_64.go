//go:build linux && (amd64 || arm64 || riscv64 || loong64)

package fsutil

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatatName is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) of name
// as a listing holds it, NUL-terminated: no copy made of it, which a
// scan would make for every entry.
func fstatatName(dirfd int, name []byte, st *unix.Stat_t) error {
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
