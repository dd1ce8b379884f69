//go:build unix

package gemkitdir

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses a folder that is a link, that another user owns,
// or that others may enter (it is made 0700 when it is this user's).
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (a link?): remove it", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user: remove it", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%s may be entered by others: %w", dir, err)
		}
	}
	return nil
}
