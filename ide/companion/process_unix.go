//go:build unix

package companion

import (
	"errors"
	"syscall"
)

// processAlive reports whether process pid exists (EPERM: it exists but
// is someone else's).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
