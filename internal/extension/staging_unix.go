//go:build unix

package extension

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether a process with this id exists (EPERM:
// it exists but belongs to someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sameFileSystem reports whether a and b are on one file system, so a
// rename from one to the other is atomic.
func sameFileSystem(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA != nil || errB != nil {
		return false
	}
	sa, okA := fa.Sys().(*syscall.Stat_t)
	sb, okB := fb.Sys().(*syscall.Stat_t)
	return okA && okB && sa.Dev == sb.Dev
}
