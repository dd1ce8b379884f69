// The files a manifest names, looked at through the extension folder's
// Root without following a link, and the advice about each way they fail.

package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// lstat is Lstat of p, a relative name whose last component is base,
// looked at in the folder dir (the Root of p's folder).
func (v *validator) lstat(dir *fsutil.Root, p, base string, final bool) (fs.FileInfo, error) {
	if !final {
		if fi, ok := v.seen[p]; ok {
			return fi, nil
		}
	}
	fi, err := dir.Lstat(base)
	if err == nil && !final {
		if v.seen == nil {
			v.seen = map[string]fs.FileInfo{}
		}
		v.seen[p] = fi
	}
	return fi, err
}

// folder opens p, a folder (not a link) named base in the folder dir,
// as a Root, once.
func (v *validator) folder(dir *fsutil.Root, p, base string) (*fsutil.Root, error) {
	if f, ok := v.folders[p]; ok {
		return f, nil
	}
	f, err := dir.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	if v.folders == nil {
		v.folders = map[string]*fsutil.Root{}
	}
	v.folders[p] = f
	return f, nil
}

func (v *validator) close() {
	for _, f := range v.folders {
		f.Close()
	}
}

// Errors about files that fileFix turns into advice.
var (
	errOutside    = errors.New("is outside the extension folder")
	errMissing    = errors.New("does not exist in the extension folder")
	errNotRegular = errors.New("is not a regular file")
)

type symlinkError struct{ at string }

func (e *symlinkError) Error() string {
	return fmt.Sprintf("goes through the symlink %q; an extension's files must be inside its folder", e.at)
}

func fileFix(err error, what string) string {
	var se *symlinkError
	switch {
	case errors.Is(err, errOutside):
		return "move the " + what + " into the extension folder and give its path relative to it"
	case errors.As(err, &se):
		return "replace the symlink " + se.at + " with the real file or folder"
	case errors.Is(err, errMissing):
		return "create the " + what + " or correct the path"
	}
	return "make it a regular file inside the extension folder"
}

// inside resolves rel against the extension folder lexically and fails when
// it leaves the folder. ${extensionPath} makes absolute paths into the
// folder, so those are accepted too.
func (v *validator) inside(rel string) (string, error) {
	p := filepath.FromSlash(rel)
	if !filepath.IsAbs(p) {
		p = filepath.Join(v.dir, p)
	}
	r, ok := fsutil.Rel(v.dir, p)
	if !ok || r == "." {
		return "", errOutside
	}
	return r, nil
}

// file checks that rel names a regular file inside the extension folder
// reached without following any symlink, and returns its clean relative
// path.
func (v *validator) file(rel string) (string, error) {
	p, err := v.inside(rel)
	if err != nil {
		return "", err
	}
	cur := ""
	dir := v.root
	parts := strings.Split(p, string(filepath.Separator))
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		final := i == len(parts)-1
		var fi fs.FileInfo
		if dir != nil {
			fi, err = v.lstat(dir, cur, part, final)
		} else {
			// Below something that is not a folder: the lookup fails
			// as the whole name's does.
			fi, err = v.root.Lstat(cur)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", errMissing
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", &symlinkError{at: filepath.Join(parts[:i+1]...)}
		}
		if final && !fi.Mode().IsRegular() {
			return "", errNotRegular
		}
		if !final && dir != nil && fi.IsDir() {
			if dir, err = v.folder(dir, cur, part); err != nil {
				return "", err
			}
		} else {
			dir = nil
		}
	}
	return p, nil
}
