package extension

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directory entries a and b in one step with
// renameat2(RENAME_EXCHANGE). It returns errNoExchange when the file
// system cannot, so the caller falls back to two renames.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) {
		return errNoExchange
	}
	return err
}
