package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// The agent reads and edits the workspace with the person's rights,
// outside any sandbox, while extension tools it called may have written
// there: every name the model gives is resolved beneath the workspace
// opened once for the call (fsutil.Root), so that a link a tool planted
// cannot lead a read or a write elsewhere.

// file is a file of the workspace the model named, resolved once.
type file struct {
	// root is the workspace, opened for this one call.
	root *fsutil.Root
	// rel is the file's real name in the workspace: every link on the
	// way that stays inside resolved, so the person reviews the file
	// that would change.
	rel string
	// abs is the real absolute path, as the host and the reviewer see
	// it.
	abs string
	// shown is rel with forward slashes, for messages.
	shown string
}

func (f *file) close() { f.root.Close() }

// ErrOutside is a path outside the workspace.
var ErrOutside = errors.New("outside the workspace")

// openFile resolves p, a path the model gave (relative to the workspace,
// or absolute inside it), through the workspace's Root. A path that
// leads out, by "..", an absolute path elsewhere or a link, is refused
// with ErrOutside in words for the model. The file need not exist.
func (a *Agent) openFile(p string) (*file, error) {
	if strings.ContainsRune(p, 0) || strings.TrimSpace(p) == "" {
		return nil, fmt.Errorf("%q is not a path", p)
	}
	// The workspace itself is the person's choice: its own path is
	// trusted, links in it included.
	ws, err := fsutil.Workspace(a.Workspace)
	if err != nil {
		return nil, err
	}
	outside := func() error {
		return fmt.Errorf("%s is %w (%s); only files under it can be read or edited", p, ErrOutside, ws)
	}
	// The name is cleaned as written ("../ws/a.txt" and "sub/../a.txt"
	// are a.txt): a ".." never climbs through a link this way, and what
	// remains is resolved beneath the workspace.
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ws, abs)
	}
	name, ok := fsutil.Rel(ws, abs)
	if !ok {
		given, aerr := filepath.Abs(a.Workspace)
		if name, ok = fsutil.Rel(given, abs); aerr != nil || !ok {
			return nil, outside()
		}
	}
	root, err := fsutil.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	rel, err := root.Resolve(name)
	if errors.Is(err, fsutil.ErrOutside) {
		root.Close()
		return nil, outside()
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return &file{root: root, rel: rel, abs: root.Path(rel), shown: filepath.ToSlash(rel)}, nil
}

// protection says why the file is protected, in words for the person
// and the model, or "" when it is not: a path the permission policy
// protects from a tool that may write the workspace
// (permission.ProtectedPaths: what it holds is run or obeyed by another
// program outside any sandbox). The agent's own edits respect the same
// paths, worded as the consent text words them.
func (a *Agent) protection(f *file) string {
	home := a.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	list := permission.ProtectedPaths(permission.GuardInputs{Write: permission.AccessWorkspace, Workspace: f.root.Dir(), Home: home, Getenv: os.Getenv})
	g, ok := permission.Covering(list, f.abs)
	if !ok {
		return ""
	}
	rel, ok := fsutil.Rel(f.root.Dir(), g.Path)
	if !ok {
		rel = g.Path
	}
	why := g.Why()
	if why == "" {
		why = "another program runs or obeys what it holds, outside any sandbox"
	}
	return fmt.Sprintf("%s is a protected path (%s): %s", f.shown, filepath.ToSlash(rel), why)
}

// allowed reports whether the person allowed edits of f, a protected
// file, by naming it (run and chat's --allow-protected).
func (a *Agent) allowed(f *file) bool {
	for _, p := range a.AllowProtected {
		g, err := a.openFile(p)
		if err != nil {
			continue
		}
		same := g.rel == f.rel
		g.close()
		if same {
			return true
		}
	}
	return false
}

// notRegular says what f is when it is not a regular file, for messages.
func notRegular(f *file) *notRegularError {
	fi, err := f.root.Lstat(f.rel)
	if err != nil {
		return &notRegularError{mode: fs.ModeIrregular}
	}
	return &notRegularError{mode: fi.Mode()}
}

// notRegularError says a path the agent would read is not a regular
// file; mode is what it is.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string {
	if e.mode.IsDir() {
		return "a folder, not a file"
	}
	return fmt.Sprintf("not a regular file (%s)", e.mode.Type())
}

// open opens f for reading: a regular file only, without blocking (a
// FIFO a tool made at README.md would block the open and every read for
// good, a device could be endless). Anything else is a *notRegularError
// inside an *fs.PathError.
func (f *file) open() (*os.File, fs.FileInfo, error) {
	r, err := f.root.Open(f.rel)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, nil, &fs.PathError{Op: "read", Path: f.abs, Err: notRegular(f)}
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := r.Stat()
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, fi, nil
}

// folder is the folder an edit is written into, held open from before
// the review until the write: f's parent, or nil while it does not exist.
type folder struct {
	rel  string
	root *fsutil.Root
}

// holdFolder opens the folder f would be written in, if it exists.
func (f *file) holdFolder() (*folder, error) {
	d := &folder{rel: filepath.Dir(f.rel)}
	sub, err := f.root.OpenFolder(d.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d, nil
	case err != nil:
		return nil, err
	}
	d.root = sub
	return d, nil
}

func (d *folder) close() {
	if d.root != nil {
		d.root.Close()
	}
}

// recheck makes sure, right before an accepted edit is written, that the
// folder held since the review is still the one at its real name in the
// workspace, reached without a link: a tool that swapped a folder on the
// way for a link, or moved the folder, while the person reviewed makes
// the write refused rather than land elsewhere. A folder that did not
// exist is made now, through the workspace's Root, and held.
func (d *folder) recheck(f *file) error {
	if d.root == nil {
		if err := f.root.MkdirAll(d.rel, 0o755); err != nil {
			return err
		}
		sub, err := f.root.OpenFolder(d.rel)
		if err != nil {
			return changed(f, err)
		}
		d.root = sub
		return d.fileUnchanged(f)
	}
	now, err := f.root.OpenFolder(d.rel)
	if err != nil {
		return changed(f, err)
	}
	defer now.Close()
	a, err := d.root.Stat(".")
	if err != nil {
		return err
	}
	b, err := now.Stat(".")
	if err != nil {
		return err
	}
	if !os.SameFile(a, b) {
		return changed(f, &fs.PathError{Op: "write", Path: f.root.Path(d.rel), Err: fsutil.ErrChanged})
	}
	return d.fileUnchanged(f)
}

// fileUnchanged refuses a file that has become a symbolic link since it
// was resolved (its real name was no link then): a writer by path would
// follow it.
func (d *folder) fileUnchanged(f *file) error {
	fi, err := d.root.Lstat(filepath.Base(f.rel))
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return changed(f, &fs.PathError{Op: "write", Path: f.abs, Err: fsutil.ErrChanged})
	}
	return nil
}

func changed(f *file, err error) error {
	return fmt.Errorf("the way to %s changed while the edit was reviewed (%w)", f.shown, err)
}
