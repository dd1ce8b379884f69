package pkgrun

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockFileName is the lock file of an extension's folder of trees.
const lockFileName = ".lock"

// Lock takes the lock of the extension ext's folder of trees under root,
// waiting for it: one gemkit command at a time installs, records and
// prunes an extension's trees, so that none prunes a tree another has
// just installed. The returned func releases it.
func Lock(root, ext string) (func(), error) {
	dir, err := extDir(root, ext)
	if err != nil {
		return nil, err
	}
	if err := privateDir(root, dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the lock of %s's packages: %w", ext, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("the lock of %s's packages: %w", ext, err)
	}
	return func() {
		funlock(f)
		f.Close()
	}, nil
}
