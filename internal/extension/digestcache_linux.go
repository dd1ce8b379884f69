package extension

import (
	"io/fs"
	"syscall"
)

// statKeyOf is the key of the digest cache for the file fi describes:
// what its descriptor's fstat says. ok is false where the system says
// less than the key needs, and the file is then always hashed.
func statKeyOf(fi fs.FileInfo) (k statKey, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	return statKey{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Size:  st.Size,
		Mode:  uint32(fi.Mode()),
		Mtime: st.Mtim.Nano(),
		Ctime: st.Ctim.Nano(),
	}, true
}
