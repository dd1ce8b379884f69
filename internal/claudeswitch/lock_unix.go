//go:build unix

package claudeswitch

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lock takes the switch's lock (Dir/lock), which serialises the
// read-modify-write of its records and of Claude Code's settings
// between gemkit processes; the func returned releases it.
func (s *Switch) lock() (func(), error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
