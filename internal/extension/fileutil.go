package extension

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic writes data to path through a temporary file in the same
// folder and a rename, so a reader never sees half a file and a crash
// leaves the old file intact.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	// Make the rename itself durable; without this a crash can bring
	// back the old file (or none) although the write had returned.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// lock takes gemkit's store lock, which serialises read-modify-write of
// the enablement and consent files and the final renames of installs
// between gemkit processes. The returned func releases it.
func (s *Store) lock() (func(), error) {
	if err := os.MkdirAll(s.stateDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", s.stateDir(), err)
	}
	f, err := os.OpenFile(filepath.Join(s.stateDir(), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the store lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("take the store lock: %w", err)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}
