//go:build linux && !(amd64 || arm64 || riscv64 || loong64)

package fsutil

import "golang.org/x/sys/unix"

// fstatatName is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) of name
// as a listing holds it, NUL-terminated.
func fstatatName(dirfd int, name []byte, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, string(name[:len(name)-1]), st, unix.AT_SYMLINK_NOFOLLOW)
}
