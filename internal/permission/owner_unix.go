//go:build unix

package permission

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether this user owns the file fi describes.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// privateToMe reports whether fi is a folder this user owns that nobody
// else may enter.
func privateToMe(fi fs.FileInfo) bool {
	return fi.IsDir() && ownedByMe(fi) && fi.Mode().Perm()&0o077 == 0
}

// fileID is the device and inode of the file fi describes, and its
// owner.
func fileID(fi fs.FileInfo) (dev, ino uint64, uid int) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, -1
	}
	return uint64(st.Dev), st.Ino, int(st.Uid)
}
