package codeintel

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Quoting is what an answer may show the text of. A language server
// names whatever file it read (a .ts file may import any JSON file by
// absolute path, resolveJsonModule makes it a module, and the definition
// of one of its keys is then a line of that file), so an answer that
// quoted every file a server named would read, for the model, the
// credentials no tool may read. An answer therefore quotes:
//   - a file of the workspace, read through its Root (no link out);
//   - a file outside it only below one of Roots, the read-only folders
//     of the language servers' profiles (the Go toolchain and module
//     cache, the servers' own installations), read through a Root of
//     that folder (no link out of it either);
//
// and never a file in Closed, wherever it lies. Every other file is
// named, with its line and column, and the answer says in words that its
// text is not shown. Paths are judged as they resolve: a link in the
// workspace to ~/.gemini is judged as ~/.gemini.
type Quoting struct {
	// Roots are the folders outside the workspace whose files may be
	// quoted. Roots is asked once, when an answer first names a file
	// outside the workspace; nil quotes nothing outside it.
	Roots func() []string
	// Closed are the folders and files no answer quotes
	// (permission.ClosedPaths: what no tool may read), asked when an
	// answer reads a file and the last list is older than closedTTL;
	// nil closes nothing but what lies outside the workspace and Roots.
	Closed func() []string
}

// Why a file's text is not shown, in the words an answer uses.
var (
	errClosed  = errors.New("a closed path: no tool may read it, so no answer quotes it")
	errNotRoot = errors.New("outside the workspace and the language servers' read-only folders, so its text is not shown")
	errLinkOut = errors.New("a link that leads out of the workspace, so its text is not shown")
)

// withheld reports whether err says a file's text is kept out of an
// answer, and the words for it.
func withheld(err error) (string, bool) {
	switch {
	case errors.Is(err, errClosed):
		return "not quoted: " + errClosed.Error(), true
	case errors.Is(err, errNotRoot):
		return "not quoted: " + errNotRoot.Error(), true
	case errors.Is(err, errLinkOut):
		return "not quoted: " + errLinkOut.Error(), true
	}
	return "", false
}

// quoter applies a Quoting for the Tools of one workspace: the roots are
// opened once, when first needed, and kept.
type quoter struct {
	q Quoting
	// workspace is the workspace folder (resolved).
	workspace string

	once  sync.Once
	roots []*fsutil.Root

	// The closed list is kept for closedTTL: it changes when a server
	// records itself, and asking for it costs more than a warm answer.
	mu       sync.Mutex
	closed   closedList
	closedAt time.Time
}

// closedList is the closed paths, and whether one of them lies in the
// workspace (only then is a workspace file's path resolved to be
// judged: the workspace's Root already keeps links from leading out).
type closedList struct {
	paths  []string
	inside bool
}

// closedTTL is how long a closed list is used before it is asked again.
const closedTTL = 2 * time.Second

// closedList returns the closed paths, asked again after closedTTL.
func (qt *quoter) closedList() closedList {
	if qt.q.Closed == nil {
		return closedList{}
	}
	qt.mu.Lock()
	defer qt.mu.Unlock()
	if !qt.closedAt.IsZero() && time.Since(qt.closedAt) < closedTTL {
		return qt.closed
	}
	var cl closedList
	for _, c := range qt.q.Closed() {
		if !filepath.IsAbs(c) {
			continue
		}
		c = filepath.Clean(c)
		cl.paths = append(cl.paths, c)
		// A closed path lies in the workspace, or the workspace in it.
		if fsutil.Within(qt.workspace, c) || fsutil.Within(c, qt.workspace) {
			cl.inside = true
		}
	}
	qt.closed, qt.closedAt = cl, time.Now()
	return cl
}

// openRoots opens the folders of q.Roots that exist, resolved (a root
// named through a link is the folder it leads to, as the paths servers
// name are).
func (qt *quoter) openRoots() []*fsutil.Root {
	qt.once.Do(func() {
		if qt.q.Roots == nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range qt.q.Roots() {
			if !filepath.IsAbs(d) {
				continue
			}
			real, err := filepath.EvalSymlinks(d)
			if err != nil || seen[real] {
				continue
			}
			seen[real] = true
			r, err := fsutil.OpenRoot(real)
			if err != nil {
				continue
			}
			qt.roots = append(qt.roots, r)
		}
	})
	return qt.roots
}

// close releases the roots.
func (qt *quoter) close() {
	qt.once.Do(func() {}) // roots never asked for are not asked for now
	for _, r := range qt.roots {
		r.Close()
	}
}

// closedAt reports whether p, as named or as it resolves, is or lies in
// one of closed.
func closedAt(closed []string, p string) bool {
	if len(closed) == 0 {
		return false
	}
	paths := []string{filepath.Clean(p)}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	for _, c := range closed {
		for _, q := range paths {
			if c != "" && fsutil.Within(c, q) {
				return true
			}
		}
	}
	return false
}

// quotable reports whether the file outside the workspace at p resolves
// below one of the roots.
func (qt *quoter) quotable(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	for _, r := range qt.openRoots() {
		if _, err := r.Rel(real); err == nil {
			return true
		}
	}
	return false
}

// readOutside reads a file outside the workspace that a server named
// (and the caller found not closed): only when it resolves below one of
// the roots, read
// through that root's Root (a regular file, no link out of the root, at
// most maxFileBytes). Otherwise the error says why its text is not
// shown.
func (qt *quoter) readOutside(p string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		// A file that does not resolve is not read: whether it would
		// lie in a root cannot be told.
		return nil, &fs.PathError{Op: "quote", Path: p, Err: errNotRoot}
	}
	for _, r := range qt.openRoots() {
		name, err := r.Rel(real)
		if err != nil {
			continue
		}
		return r.ReadFile(name, maxFileBytes)
	}
	return nil, &fs.PathError{Op: "quote", Path: p, Err: errNotRoot}
}

// Quotes reports whether an answer may show the text of the file at the
// absolute path p (the Quoting rule), for a caller that hands a Source's
// answers on itself (the diagnostics an editor's companion asks for);
// why, when not, says so in words.
func (t *Tools) Quotes(p string) (ok bool, why string) {
	why, held := newFileCache(t.root, t.qt).withheld(p)
	return !held, why
}
