package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrOutside is the error (wrapped in an *fs.PathError naming the whole
// path) of a name that leads out of a [Root]: "..", an absolute symbolic
// link, or a relative one that climbs above the root.
var ErrOutside = errors.New("leads outside its folder (through .. or a symbolic link); gemkit does not follow it")

// ErrNotRegular is the error (wrapped in an *fs.PathError naming the whole
// path) of a read of something other than a regular file: a FIFO, a
// device, a socket, a folder.
var ErrNotRegular = errors.New("is not a regular file; gemkit reads only regular files here")

// ErrTooLarge is the error (wrapped in an *fs.PathError naming the whole
// path) of a ReadFile past its limit; its text names the limit.
var ErrTooLarge = errors.New("is larger than gemkit reads")

type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("is larger than %d bytes, more than gemkit reads here", e.limit)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Root is a folder gemkit reads or writes on behalf of something it does
// not trust: an extension's folder, a clone or a staging folder, the
// workspace an agent or a tool works in. gemkit acts there with the
// user's rights, outside any sandbox, so a symbolic link that an extension
// ships or a tool plants must not lead those rights elsewhere
// (`.env -> ../../.env` reading ~/.gemini/.env, `.env -> /proc/self/fd/0`
// reading gemkit's own stdin, `pkg -> ~/src` moving a folder of the
// user's).
//
// Every name is resolved beneath the folder, component by component, by
// the kernel's *at calls on a descriptor opened once (os.Root): a
// component that leaves it is refused with [ErrOutside]; links that stay
// inside are followed. Reads take regular files only, opened without
// blocking, so a FIFO or a device is refused with [ErrNotRegular] rather
// than read or waited on. Writes are atomic (a temporary file in the same
// folder, renamed over the name), and the rename replaces a link at the
// final name rather than writing through it.
//
// The folder is the one named when the Root was opened even if it is
// renamed afterwards. A Root is safe for concurrent use.
type Root struct {
	r   *os.Root
	dir string
}

// OpenRoot opens dir as a Root. dir itself is trusted (the store, the
// workspace the person chose, a folder gemkit made): links in its own
// path are followed; nothing below it is.
func OpenRoot(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &Root{r: r, dir: abs}, nil
}

// Close releases the folder's descriptor.
func (r *Root) Close() error { return r.r.Close() }

// Dir is the absolute path the Root was opened with.
func (r *Root) Dir() string { return r.dir }

// Path is the absolute path of name in the Root, for messages.
func (r *Root) Path(name string) string { return filepath.Join(r.dir, filepath.FromSlash(name)) }

// Rel turns p, an absolute path or one relative to the Root, into a name
// in it; a path lexically outside is refused with ErrOutside.
func (r *Root) Rel(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.dir, p)
	}
	return NameIn(r.dir, p)
}

// NameIn returns the absolute path p as a name relative to dir, for a
// Root of dir; a path lexically outside dir is refused with ErrOutside.
func NameIn(dir, p string) (string, error) {
	rel, ok := Rel(dir, p)
	if !ok {
		return "", &fs.PathError{Op: "open", Path: p, Err: ErrOutside}
	}
	return rel, nil
}

// wrap gives err the Root's whole path and turns os.Root's escape error
// into ErrOutside.
func (r *Root) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if isEscape(pe.Err) {
			return &fs.PathError{Op: op, Path: r.Path(name), Err: r.outside(name)}
		}
		return &fs.PathError{Op: pe.Op, Path: r.Path(name), Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) && isEscape(le.Err) {
		return &fs.PathError{Op: op, Path: r.Path(name), Err: r.outside(name)}
	}
	return err
}

// outside is ErrOutside for name, saying where the link goes when name
// itself is the link that leads out, so that the person sees which file
// to look at.
func (r *Root) outside(name string) error {
	if target, err := r.r.Readlink(name); err == nil {
		return &outsideError{target: target}
	}
	return ErrOutside
}

// outsideError is ErrOutside for a symbolic link whose target is known.
type outsideError struct{ target string }

func (e *outsideError) Error() string {
	return "is a symbolic link to " + e.target + ", outside its folder; gemkit does not follow it"
}

func (e *outsideError) Is(target error) bool { return target == ErrOutside }

// isEscape reports os.Root's refusal of a name that leaves the root; the
// standard library does not export that error value, so its text is
// matched (TestRootRefusesLinksOut keeps the match true).
func isEscape(err error) bool {
	return err != nil && err.Error() == "path escapes from parent"
}

// Open opens name for reading. Only a regular file is opened: the open
// does not block on a FIFO, and anything not regular is closed again and
// refused with ErrNotRegular.
func (r *Root) Open(name string) (*os.File, error) {
	f, _, err := r.OpenStat(name)
	return f, err
}

// OpenStat is Open that also returns what the descriptor opened is
// (fstat of it, not a look at the name again).
func (r *Root) OpenStat(name string) (*os.File, fs.FileInfo, error) {
	f, err := r.r.OpenFile(name, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil, nil, r.wrap("open", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, r.wrap("stat", name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: r.Path(name), Err: ErrNotRegular}
	}
	return f, fi, nil
}

// ReadFile reads the regular file name, at most limit bytes; a longer file
// is an error naming the limit. limit ≤ 0 means no bound.
func (r *Root) ReadFile(name string, limit int64) ([]byte, error) {
	f, fi, err := r.OpenStat(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var data []byte
	if limit <= 0 || fi.Size() <= limit {
		if data, err = readAll(f, fi.Size(), limit); err != nil {
			return nil, r.wrap("read", name, err)
		}
	}
	if limit > 0 && (fi.Size() > limit || int64(len(data)) > limit) {
		return nil, &fs.PathError{Op: "read", Path: r.Path(name), Err: &tooLargeError{limit}}
	}
	return data, nil
}

// readAll reads f to its end, at most limit+1 bytes when limit > 0. size
// is what fstat said the file holds: the buffer is made that large at
// once, so that a file that has not changed since is read in one read
// and one more that finds its end (io.ReadAll, starting at 512 bytes,
// took six reads and as many copies for a manifest of 2 KB). The file
// may have grown since: reading goes on until its end.
func readAll(f io.Reader, size, limit int64) ([]byte, error) {
	if limit > 0 {
		f = io.LimitReader(f, limit+1)
		size = min(size, limit)
	}
	data := make([]byte, 0, max(size, 0)+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// Stat is os.Stat of name, following links that stay inside.
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	fi, err := r.r.Stat(name)
	return fi, r.wrap("stat", name, err)
}

// Lstat is os.Lstat of name: a link at the final name is described, not
// followed; links before it must stay inside.
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	fi, err := r.r.Lstat(name)
	return fi, r.wrap("lstat", name, err)
}

// Readlink returns the target of the link name, as written in it.
func (r *Root) Readlink(name string) (string, error) {
	t, err := r.r.Readlink(name)
	return t, r.wrap("readlink", name, err)
}

// ReadDir lists the folder name, sorted by name, as os.ReadDir does.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(r.r.FS(), slashName(name))
	return ents, r.wrap("readdir", name, err)
}

// WalkDir walks the tree at name as fs.WalkDir does: slash-separated names
// relative to the Root, links reported as links and never entered.
func (r *Root) WalkDir(name string, fn fs.WalkDirFunc) error {
	return fs.WalkDir(r.r.FS(), slashName(name), fn)
}

// slashName is name as io/fs wants it: slash-separated, "." for the root.
func slashName(name string) string {
	n := path.Clean(filepath.ToSlash(name))
	if n == "" || n == "/" {
		return "."
	}
	return strings.TrimPrefix(n, "./")
}

// OpenRoot opens the folder name as a Root of its own, reached through
// this one (no link out on the way).
func (r *Root) OpenRoot(name string) (*Root, error) {
	sub, err := r.r.OpenRoot(name)
	if err != nil {
		return nil, r.wrap("open", name, err)
	}
	return &Root{r: sub, dir: r.Path(name)}, nil
}

// MkdirAll creates the folder name and the folders it needs.
func (r *Root) MkdirAll(name string, perm fs.FileMode) error {
	return r.wrap("mkdir", name, r.r.MkdirAll(name, perm))
}

// Remove removes the file or empty folder name (a link itself, never its
// target).
func (r *Root) Remove(name string) error { return r.wrap("remove", name, r.r.Remove(name)) }

// RemoveAll removes name and everything below it, never following a link.
func (r *Root) RemoveAll(name string) error {
	return r.wrap("remove", name, r.r.RemoveAll(name))
}

// Rename renames oldname to newname, both in the Root.
func (r *Root) Rename(oldname, newname string) error {
	return r.wrap("rename", newname, r.r.Rename(oldname, newname))
}

// WriteFileAtomic writes data to name as [WriteFileAtomic] does, inside
// the Root: a reader never sees half a file, and a link at name is
// replaced, not written through.
func (r *Root) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	return r.writeAtomic(name, data, perm, nil)
}

// ReplaceFile writes data to name atomically, as [ReplaceFile] does inside
// the Root: the mode (and, where it may, the owner) of the regular file it
// replaces is kept; a new file gets 0644 and the folders it needs;
// anything but a regular file or nothing at name is refused.
func (r *Root) ReplaceFile(name string, data []byte) error {
	fi, err := r.r.Lstat(name)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: r.Path(name), Err: ErrNotRegular}
	case err == nil:
		return r.writeAtomic(name, data, fi.Mode().Perm(), func(f *os.File) { keepOwner(f, fi) })
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(name); dir != "." {
			if err := r.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		return r.writeAtomic(name, data, 0o644, nil)
	default:
		return r.wrap("lstat", name, err)
	}
}

func (r *Root) writeAtomic(name string, data []byte, perm fs.FileMode, prepare func(*os.File)) error {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := r.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return r.wrap("create", name, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			r.r.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if prepare != nil {
		prepare(f)
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
	if err := r.r.Rename(tmp, name); err != nil {
		return r.wrap("rename", name, err)
	}
	ok = true
	return nil
}
