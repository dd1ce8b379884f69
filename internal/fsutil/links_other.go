//go:build !unix

package fsutil

import "io/fs"

// LinkCount is 1 where the system does not count names.
func LinkCount(fs.FileInfo) uint64 { return 1 }
