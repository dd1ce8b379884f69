package toolrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// removeTemp deletes a tool's private temp dir whatever modes the tool set
// inside it (a folder of mode 000 inside one of mode 500 stops a plain
// RemoveAll of an unprivileged owner): it first gives the owner full
// rights on every folder, then removes the tree. Symlinks are never
// followed: WalkDir does not, and chmod is applied only to directories
// it found as directories.
func removeTemp(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = os.Chmod(dir, 0o700)
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
			if err != nil {
				// Unreadable before the chmod: walk it again now.
				_ = removeTemp(path)
				return fs.SkipDir
			}
		}
		return nil
	})
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
		return nil
	}
	return err
}
