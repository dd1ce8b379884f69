package extension

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Whether consent to an extension's content can bind the bytes that
// run (Bindable): a file with another name on disk, or a link out of the
// folder into one a program may write, would let the code change after
// the person agreed. Apart from reading the content, which only records
// what it found.

// linkOut reports whether the link rel, whose target is target, leads
// out of the folder of root (resolved as the kernel would, through the
// links inside), and where to: target itself when absolute, else target
// taken from the link's own folder.
func linkOut(root *fsutil.Root, rel, target string) (string, bool) {
	if _, err := root.Resolve(rel); !errors.Is(err, fsutil.ErrOutside) {
		return "", false
	}
	if filepath.IsAbs(target) {
		return filepath.Clean(target), true
	}
	return filepath.Join(root.Dir(), filepath.Dir(filepath.FromSlash(rel)), target), true
}

// Bindable says whether consent to c can bind the bytes that run: it is
// a *BindError when a file of the extension has another name
// (c.Shared), or a link leads out of its folder into one of writable,
// the folders some tool may write; nil otherwise. The sandbox keeps an
// extension's folder read-only to every tool and lets no tool make a
// hard link into it, so the bytes of files with one name inside it are
// those the digest read, but a file with another name, or one reached
// through a link to a writable folder, can be rewritten by a tool (or a
// build step) between the consent check and the interpreter reading it.
func (c Content) Bindable(dir string, writable []string) error {
	e := &BindError{Dir: dir, Shared: c.Shared}
	for rel, dest := range c.LinksOut {
		for _, w := range writable {
			if fsutil.Within(w, dest) {
				e.LinksOut = append(e.LinksOut, LinkOut{Path: rel, Target: dest, Writable: w})
				break
			}
		}
	}
	if len(e.Shared) == 0 && len(e.LinksOut) == 0 {
		return nil
	}
	sort.Slice(e.LinksOut, func(i, j int) bool { return e.LinksOut[i].Path < e.LinksOut[j].Path })
	return e
}

// LinkOut is a symbolic link of an extension leading into a folder tools
// may write.
type LinkOut struct {
	Path, Target, Writable string
}

// BindError is an extension whose files consent cannot bind, with what
// to do about each file.
type BindError struct {
	Dir      string
	Shared   []string
	LinksOut []LinkOut
}

func (e *BindError) Error() string {
	var parts []string
	if n := len(e.Shared); n > 0 {
		shown := e.Shared[:min(n, maxNamedFiles)]
		names := make([]string, len(shown))
		for i, s := range shown {
			names[i] = Printable(s)
		}
		list := strings.Join(names, ", ")
		if n > len(shown) {
			list += fmt.Sprintf(" and %d more", n-len(shown))
		}
		what := "this file has"
		if n > 1 {
			what = "these files have"
		}
		parts = append(parts, fmt.Sprintf("%s another name on disk (a hard link, such as a build step's ln or pnpm's store makes): %s; a program writing that other name would change the code after you agreed to it. Make each a copy of its own (cp --remove-destination, or pnpm's package-import-method=copy)", what, list))
	}
	for _, l := range e.LinksOut {
		parts = append(parts, fmt.Sprintf("%s is a symbolic link to %s, inside %s, which extension tools or other programs may write; replace the link with the file itself", Printable(l.Path), Printable(l.Target), Printable(l.Writable)))
	}
	return "gemkit does not run the tools or the MCP servers of the extension in " + Printable(e.Dir) + ", because your consent could not bind the code that runs: " + strings.Join(parts, "; ")
}
