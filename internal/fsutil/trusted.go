package fsutil

import (
	"io/fs"
	"os"
	"path/filepath"
)

// This file holds the few operations on paths that gemkit trusts as a
// whole (a folder it made itself, a file the person named), for the
// packages that otherwise touch only Roots: each still refuses to follow
// a link below the path or to block.

// RemoveTree removes dir, a folder gemkit made (a staging folder, a
// tool's private temp dir), and everything below it, which an extension
// or a tool may have filled: links inside are removed, never followed
// (os.RemoveAll removes through descriptors, without following them).
func RemoveTree(dir string) error { return os.RemoveAll(dir) }

// OpenRegular opens the file at path, a path the person gave, for
// reading: the open does not block on a FIFO, and anything but a regular
// file is refused with ErrNotRegular.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// StatIn is Root.Stat of name, one component, in the folder dir, a
// folder gemkit trusts (an entry of the extensions folder), without
// opening a Root when it need not: name itself is looked at without
// following it (a single lstat, nothing below dir being followed), and
// only a link there is followed, through a Root of dir, while it stays
// inside. It is for checks run on every tool call across every installed
// extension.
func StatIn(dir, name string) (fs.FileInfo, error) {
	p := filepath.Join(dir, name)
	if filepath.Base(p) != name || name == "." || name == ".." {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrInvalid}
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return fi, err
	}
	root, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Stat(name)
}
