//go:build unix

package pkgrun

import (
	"os"

	"golang.org/x/sys/unix"
)

func flock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

func funlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
