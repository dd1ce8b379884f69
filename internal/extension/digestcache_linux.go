package extension

import "github.com/gemkit/gemkit/internal/fsutil"

// statKeyOf is the key of the digest cache for the file st describes:
// what its lstat, or its descriptor's fstat, says. ok is false where
// the system says less than the key needs, and the file is then always
// hashed.
func statKeyOf(st *fsutil.ScanStat) (k statKey, ok bool) {
	return statKey{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mode: uint32(st.Mode), Mtime: st.Mtim, Ctime: st.Ctim}, true
}
