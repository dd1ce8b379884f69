package extension

import (
	"fmt"
	"os"
	"path/filepath"
)

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

// update changes one of the files the lock guards: under the lock it
// reads the file, lets change alter what it holds and writes it back, so
// that two gemkit processes changing it at once both count. A change
// that fails writes nothing.
func update[T any](s *Store, read func() (T, error), change func(*T) error, write func(T) error) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	v, err := read()
	if err != nil {
		return err
	}
	if err := change(&v); err != nil {
		return err
	}
	return write(v)
}
