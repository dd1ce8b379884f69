//go:build unix

package discovery

import (
	"io/fs"
	"os"
	"syscall"
)

// fileOwner is the uid owning a file, -1 when unknown.
func fileOwner(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

// pidAlive is the real client's signal-0 probe (isPidAlive in gemini-cli
// 0.61.0 packages/core/src/ide/ide-connection-utils.ts), which on Unix is
// exactly ProcessAlive.
func pidAlive(pid int) bool { return ProcessAlive(pid) }

// openNonBlocking opens path for reading without waiting for a writer when
// it is a named pipe.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
