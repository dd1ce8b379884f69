package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links Resolve follows for one name, as the
// kernel bounds them (40 on Linux) so that a loop of links ends.
const maxLinks = 40

// Resolve returns name with every symbolic link on its way that stays in
// the Root replaced by what it points to: the real name of the file, for
// messages and for a review that must show which file would change. Each
// link is read, never followed by the kernel; one that leads out (an
// absolute target, or one that climbs above the Root) is refused with
// ErrOutside. Components that do not exist yet are kept as written, so a
// file about to be created resolves too. The result is relative to the
// Root, with the separators of the system, "." for the Root itself.
func (r *Root) Resolve(name string) (string, error) {
	todo := splitName(name)
	var done []string
	links := 0
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &fs.PathError{Op: "resolve", Path: r.Path(name), Err: ErrOutside}
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, p)...)
		fi, err := r.r.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Nothing below a missing name can be a link: the rest is
			// taken as written.
			done = append(done, p)
			continue
		case err != nil:
			return "", r.wrap("lstat", cur, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, p)
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: r.Path(name), Err: syscall.ELOOP}
		}
		target, err := r.r.Readlink(cur)
		if err != nil {
			return "", r.wrap("readlink", cur, err)
		}
		if target == "" || filepath.IsAbs(target) {
			return "", &fs.PathError{Op: "resolve", Path: r.Path(cur), Err: &outsideError{target: target}}
		}
		todo = append(splitName(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.FromSlash(path.Join(done...)), nil
}

func splitName(name string) []string {
	return strings.Split(filepath.ToSlash(name), "/")
}

// OpenFolder opens the folder at name, a real name (as Resolve gives
// it), as a Root of its own, and checks that no component of name is a
// symbolic link now and that the folder opened is the one at name: a
// folder swapped for a link, or a link swapped in on the way, between a
// check and a write is refused rather than followed. The error says
// which name changed.
func (r *Root) OpenFolder(name string) (*Root, error) {
	sub, err := r.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	// A name of one component is its own real name unless it is a link,
	// which the Lstat below shows.
	if clean := filepath.Clean(filepath.FromSlash(name)); strings.ContainsRune(clean, filepath.Separator) {
		real, rerr := r.Resolve(name)
		if rerr == nil && real != clean {
			rerr = &fs.PathError{Op: "open", Path: r.Path(name), Err: ErrChanged}
		}
		err = rerr
	}
	if err == nil {
		var opened, there fs.FileInfo
		if opened, err = sub.r.Stat("."); err == nil {
			if there, err = r.r.Lstat(name); err == nil && !os.SameFile(opened, there) {
				err = &fs.PathError{Op: "open", Path: r.Path(name), Err: ErrChanged}
			}
		}
	}
	if err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// ErrChanged is the error (in an *fs.PathError naming the path) of a name
// that no longer leads to what it led to when it was checked: a folder
// replaced by a symbolic link, or one moved away.
var ErrChanged = errors.New("changed since it was checked (a folder on the way was replaced or moved, or a symbolic link put in its place); gemkit does not follow it")

// SameFile reports whether the file opened as f is the one name now
// names in the Root (without following a link at name): a file renamed
// or replaced since it was opened is not.
func (r *Root) SameFile(f *os.File, name string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := r.Lstat(name)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}
