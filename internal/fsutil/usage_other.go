//go:build !unix

package fsutil

import "io/fs"

// DiskUsage is the file's size where files have no block count.
func DiskUsage(fi fs.FileInfo) int64 { return fi.Size() }
