package toolrun

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// removeTemp deletes a tool's private temp dir whatever modes the tool set
// inside it (a folder of mode 000 inside one of mode 500 stops a plain
// RemoveAll of an unprivileged owner): it first gives the owner full
// rights on every folder, then removes the tree. The tool filled the
// folder, so it is touched through a Root of it: links are never
// followed, and chmod is applied only to folders found as folders.
func removeTemp(dir string) error {
	if err := fsutil.RemoveTree(dir); err == nil {
		return nil
	}
	parent, err := fsutil.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return err
	}
	_ = parent.Chmod(filepath.Base(dir), 0o700)
	parent.Close()
	openAll(dir)
	err = fsutil.RemoveTree(dir)
	if err == nil {
		return nil
	}
	if _, serr := fsutil.StatIn(filepath.Dir(dir), filepath.Base(dir)); errors.Is(serr, fs.ErrNotExist) {
		return nil
	}
	return err
}

// openAll gives the owner full rights on every folder below dir, walking
// again into a folder that could not be read before.
func openAll(dir string) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	for range 64 {
		again := false
		_ = root.Walk(".", func(d *fsutil.Root, name string, e fs.DirEntry) error {
			if e.IsDir() {
				if fi, err := e.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
					_ = d.Chmod(e.Name(), 0o700)
					again = true
				}
			}
			return nil
		})
		if !again {
			return
		}
	}
}
