//go:build unix

package disclosure

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileID is the file's device and inode: a file replaced by rename within
// the same second and size still stamps differently.
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return ""
}
