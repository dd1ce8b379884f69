//go:build unix

package extension

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive advisory lock on f, waiting for it.
func lockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// unlockFile releases the lock of lockFile.
func unlockFile(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
