//go:build unix

package discovery

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ProcessAlive reports whether process pid exists. EPERM means it exists but
// belongs to someone else. Writers (stale-file cleanup) and the companion
// (watching its editor) use it; readers use PIDAlive, which follows the real
// client's rules (isPidAlive in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts) instead.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByCurrentUser reports whether info describes a file of the current
// user, the only files a companion may clean up.
func ownedByCurrentUser(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
