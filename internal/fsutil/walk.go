package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// maxWalkDepth bounds how deep Walk goes: deeper than any tree a person
// made, and short of what would exhaust descriptors.
const maxWalkDepth = 256

// WalkFunc is called by Walk for each entry below the folder walked: dir
// is the folder holding it, open as a Root of its own (valid during the
// call only), name the entry's slash path from the folder walked, and d
// the entry itself (a link is reported as a link). A file is opened
// with dir.Open(d.Name()): one system call whatever its depth. Returning
// fs.SkipDir for a folder leaves it out; fs.SkipAll ends the walk.
type WalkFunc func(dir *Root, name string, d fs.DirEntry) error

// Walk walks the tree at name in lexical order, as fs.WalkDir does, but
// holds each folder open while its entries are visited, so that every
// name is resolved beneath the folder just read: a folder swapped for a
// link while the walk runs is refused (ErrChanged), never entered.
// Links are reported, never followed.
func (r *Root) Walk(name string, fn WalkFunc) error { return r.walkFrom(name, fn, false) }

// WalkReadable is Walk that leaves out, rather than fails on, the folders
// below name it cannot open or read (no permission, swapped for a link
// meanwhile): for a listing shown to someone, where one unreadable
// folder must not hide the rest.
func (r *Root) WalkReadable(name string, fn WalkFunc) error { return r.walkFrom(name, fn, true) }

func (r *Root) walkFrom(name string, fn WalkFunc, skipBad bool) error {
	start, done, err := r.walkStart(name)
	if err != nil {
		return err
	}
	defer done()
	err = start.walk("", 0, fn, skipBad)
	if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

func (r *Root) walk(prefix string, depth int, fn WalkFunc, skipBad bool) error {
	if depth > maxWalkDepth {
		return &fs.PathError{Op: "walk", Path: r.dir, Err: fmt.Errorf("more than %d folders deep", maxWalkDepth)}
	}
	ents, err := r.ReadDir(".")
	if err != nil {
		if skipBad && depth > 0 {
			return nil
		}
		return err
	}
	for _, d := range ents {
		name := path.Join(prefix, d.Name())
		err := fn(r, name, d)
		if d.IsDir() && err == nil {
			err = r.walkInto(d.Name(), name, depth, fn, skipBad)
		}
		switch {
		case errors.Is(err, fs.SkipDir) && d.IsDir():
		case err != nil:
			return err
		}
	}
	return nil
}

// walkStart is the folder name of r, where a walk starts, opened
// beneath r unless it is r itself, and what to call when the walk ends.
func (r *Root) walkStart(name string) (*Root, func(), error) {
	if n := slashName(name); n != "." {
		sub, err := r.OpenFolder(n)
		if err != nil {
			return nil, nil, err
		}
		return sub, func() { sub.Close() }, nil
	}
	return r, func() {}, nil
}

// walkInto walks the folder called base in r, held open while it is
// walked, and checked to be the folder the listing showed.
func (r *Root) walkInto(base, name string, depth int, fn WalkFunc, skipBad bool) error {
	sub, err := r.OpenFolder(base)
	if err != nil {
		if skipBad {
			return nil
		}
		return err
	}
	defer sub.Close()
	return sub.walk(name, depth+1, fn, skipBad)
}

// CreateNew creates the file name with mode perm for writing; it fails
// when anything, a link included, is already at name, so that nothing is
// written through a link.
func (r *Root) CreateNew(name string, perm fs.FileMode) (*os.File, error) {
	f, err := r.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	return f, r.wrap("create", name, err)
}

// Mkdir creates the folder name with mode perm (before the umask).
func (r *Root) Mkdir(name string, perm fs.FileMode) error {
	return r.wrap("mkdir", name, r.r.Mkdir(name, perm))
}

// Symlink makes name a symbolic link to target, as it is written: the
// link is not followed, now or later, by the Root.
func (r *Root) Symlink(target, name string) error {
	return r.wrap("symlink", name, r.r.Symlink(target, name))
}

// Chmod changes the mode of the file or folder name; a link at name
// whose target is in the Root changes that target, one leading out is
// refused.
func (r *Root) Chmod(name string, mode fs.FileMode) error {
	return r.wrap("chmod", name, r.r.Chmod(name, mode))
}
