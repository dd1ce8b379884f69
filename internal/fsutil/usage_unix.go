//go:build unix

package fsutil

import (
	"io/fs"
	"syscall"
)

// DiskUsage is the space the file fi describes takes on disk (its
// blocks, so a sparse file counts what it holds), or its size where the
// system does not say.
func DiskUsage(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
