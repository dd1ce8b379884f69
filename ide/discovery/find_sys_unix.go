//go:build unix

package discovery

import (
	"errors"
	"io/fs"
	"syscall"
)

// fileOwner is the uid owning a file, -1 when unknown.
func fileOwner(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
