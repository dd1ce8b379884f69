//go:build unix

package cli

import (
	"io/fs"
	"syscall"
)

// fileUID is the owner of a file.
func fileUID(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
