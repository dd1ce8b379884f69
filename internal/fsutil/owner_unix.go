//go:build unix

package fsutil

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner of the file it replaces, best effort: only
// root may give a file away, and for anyone else the owner is already
// theirs or cannot be kept.
func keepOwner(f *os.File, was fs.FileInfo) {
	if st, ok := was.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}

// OwnedByMe reports whether the file fi describes belongs to this
// process's effective user.
func OwnedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
