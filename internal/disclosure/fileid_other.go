//go:build !unix

package disclosure

import "io/fs"

// fileID is empty where there are no inodes; size and time still stamp.
func fileID(fs.FileInfo) string { return "" }
