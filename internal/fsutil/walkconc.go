package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync/atomic"
)

// WalkConcurrent is Walk with the tree's folders read by up to workers
// goroutines at once: fn is called from as many goroutines, in no
// particular order, and must be safe for that. Each folder is opened
// beneath the one that listed it and checked to be the folder that
// listing showed (a folder swapped for another or for a link meanwhile
// is ErrChanged), and is held open while its entries are visited; a
// folder is closed once its own entries and the folders in it have been
// opened, so that the descriptors held stay few however wide the tree.
// It returns the first error of fn or of the walk; fs.SkipDir from fn
// for a folder leaves it out, for a file the rest of its folder, and
// fs.SkipAll ends the walk without an error.
//
// It is for walks that visit every entry of a large tree and do little
// with each, where the system calls of listing and opening dominate: a
// consent check of an extension shipped with its node_modules.
func (r *Root) WalkConcurrent(name string, workers int, fn WalkFunc) error {
	start, done, err := r.walkStart(name)
	if err != nil {
		return err
	}
	defer done()
	w := &concurrentWalk{fn: fn}
	top := &walkFolder{root: start}
	top.refs.Store(1)
	left, err := lifoWork(workers, []walkJob{{folder: top}}, func(j walkJob, _ int) ([]walkJob, error) { return w.visit(j) })
	// A walk that ended early leaves jobs whose folders are still open.
	for _, j := range left {
		j.parent.release()
	}
	if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// walkFolder is a folder of a concurrent walk, open while refs (its own
// visit, and each folder in it not yet opened) is above zero; the
// folder the walk started at is its caller's, and is never closed here.
type walkFolder struct {
	root  *Root
	owned bool
	refs  atomic.Int32
}

func (f *walkFolder) release() {
	if f != nil && f.refs.Add(-1) == 0 && f.owned {
		f.root.Close()
	}
}

// walkJob is a folder to visit: the start (folder set), or the entry
// base of parent, which its listing described as listed.
type walkJob struct {
	folder *walkFolder
	parent *walkFolder
	base   string
	name   string // slash path from the folder walked
	depth  int
	listed fs.FileInfo
}

type concurrentWalk struct {
	fn WalkFunc
}

// visit opens the job's folder, calls fn for each of its entries and
// returns the folders in it to visit, each holding a reference to it.
func (w *concurrentWalk) visit(j walkJob) ([]walkJob, error) {
	f := j.folder
	if f == nil {
		sub, err := j.parent.root.openListed(j.base, j.listed)
		j.parent.release()
		if err != nil {
			return nil, err
		}
		f = &walkFolder{root: sub, owned: true}
		f.refs.Store(1)
	}
	defer f.release()
	if j.depth > maxWalkDepth {
		return nil, &fs.PathError{Op: "walk", Path: f.root.dir, Err: fmt.Errorf("more than %d folders deep", maxWalkDepth)}
	}
	ents, err := f.root.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var children []walkJob
entries:
	for _, d := range ents {
		name := path.Join(j.name, d.Name())
		err := w.fn(f.root, name, d)
		switch {
		case errors.Is(err, fs.SkipDir) && d.IsDir():
			continue
		case errors.Is(err, fs.SkipDir):
			// From a file: the rest of this folder is left out, as
			// Walk and fs.WalkDir do; the folders listed before it
			// are still walked.
			break entries
		case err != nil:
			return nil, err
		case !d.IsDir():
			continue
		}
		listed, err := d.Info()
		if err != nil {
			return nil, err
		}
		children = append(children, walkJob{parent: f, base: d.Name(), name: name, depth: j.depth + 1, listed: listed})
	}
	f.refs.Add(int32(len(children)))
	return children, nil
}

// openListed opens the folder base of r and checks that it is the one
// listed described: the entry was not swapped for another folder, or
// for a link to one, since the listing.
func (r *Root) openListed(base string, listed fs.FileInfo) (*Root, error) {
	sub, err := r.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	opened, err := sub.r.Stat(".")
	if err == nil && (listed.Mode()&fs.ModeSymlink != 0 || !os.SameFile(opened, listed)) {
		err = &fs.PathError{Op: "open", Path: r.Path(base), Err: ErrChanged}
	}
	if err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}
