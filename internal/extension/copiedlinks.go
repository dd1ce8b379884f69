package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Gemini CLI 0.61 installs a local or git extension by copying its
// folder with Node's fs.promises.cp(source, destination, {recursive:
// true}) (copyExtension in its extension manager), and fs.cp, unless
// told verbatimSymlinks, rewrites every relative symbolic link as an
// absolute one to the same path in the folder copied: npm's
// node_modules/.bin/tsc -> ../typescript/bin/tsc becomes
// -> /home/me/src/ext/node_modules/typescript/bin/tsc, into the source
// folder (or, for a git source, into the temporary clone, which is gone
// once the install ends). The copy meant the extension's own file. Such
// a link leads out of the extension's folder: a sandboxed server cannot
// follow it (the source is not in its view), and where the source lies
// in a folder other programs write (a temporary folder, the workspace)
// consent cannot bind it (Content.Bindable).

// CopiedLink is a link of an extension that a copy made absolute: Path
// (slash, from the extension's folder) leads to Target, in the folder
// copied (From), where the copy meant Inside, the same path in the
// extension's own folder, which holds it.
type CopiedLink struct {
	Path, Target, From, Inside string
}

// Relative is the link's target as the copy meant it: Inside, relative
// to the link's own folder.
func (l CopiedLink) Relative() string {
	rel, err := filepath.Rel(path.Dir(l.Path), l.Inside)
	if err != nil {
		return l.Inside
	}
	return filepath.ToSlash(rel)
}

// CopiedLinks are the links of c (read from the extension folder dir)
// that lead out of it into the folder it was copied from, each to a
// path the extension holds itself. from is the folder the install
// copied, when the metadata names one (a local install's source); the
// folder is otherwise found from the links themselves: the one folder
// whose paths, taken away from the targets, name files of the
// extension. Links whose folder copied cannot be told, or that name
// what the extension does not hold, are not CopiedLinks: they are the
// author's, and said as they are.
func CopiedLinks(dir string, c Content, from string) ([]CopiedLink, error) {
	if len(c.LinksOut) == 0 {
		return nil, nil
	}
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// holds says whether the extension has rel, and it is no link out.
	holds := func(rel string) bool {
		if rel == "" || rel == "." || strings.HasPrefix(rel, "../") {
			return false
		}
		if _, out := c.LinksOut[rel]; out {
			return false
		}
		_, err := root.Lstat(rel)
		return err == nil
	}
	var froms []string
	if from != "" {
		froms = append(froms, filepath.Clean(from))
		if real, err := filepath.EvalSymlinks(from); err == nil && real != filepath.Clean(from) {
			froms = append(froms, real)
		}
	}
	// The folder copied, by how many links it explains, when the
	// metadata does not name it: each link's target, less the longest
	// path of it the extension holds.
	if len(froms) == 0 {
		votes := map[string]int{}
		for _, target := range c.LinksOut {
			parts := strings.Split(filepath.ToSlash(filepath.Clean(target)), "/")
			for i := 1; i < len(parts); i++ {
				if inside := strings.Join(parts[i:], "/"); holds(inside) {
					votes[strings.Join(parts[:i], "/")]++
					break
				}
			}
		}
		best, n := "", 0
		for f, v := range votes {
			if v > n || v == n && f < best {
				best, n = f, v
			}
		}
		if best != "" && best != "/" {
			froms = append(froms, filepath.FromSlash(best))
		}
	}
	var out []CopiedLink
	for rel, target := range c.LinksOut {
		target = filepath.Clean(target)
		for _, f := range froms {
			inside, err := filepath.Rel(f, target)
			if err != nil || !fsutil.Within(f, target) || target == f {
				continue
			}
			inside = filepath.ToSlash(inside)
			if holds(inside) && inside != rel {
				out = append(out, CopiedLink{Path: rel, Target: target, From: f, Inside: inside})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// RelinkCopied makes each link of links, in the extension folder dir,
// lead where the copy meant: its Relative target, inside the extension.
// Each is replaced atomically (a new link renamed over it), through the
// folder's Root, and only while it still leads to the Target it was
// found with: a link changed since is left as it is, and said.
func RelinkCopied(dir string, links []CopiedLink) error {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, l := range links {
		name := filepath.FromSlash(l.Path)
		now, err := root.Readlink(name)
		if err != nil || filepath.Clean(now) != l.Target {
			errs = append(errs, fmt.Errorf("%s changed since it was read; it is left as it is", Printable(l.Path)))
			continue
		}
		tmp := filepath.Join(filepath.Dir(name), ".gemkit-relink-"+filepath.Base(name))
		if err := root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err := root.Symlink(filepath.FromSlash(l.Relative()), tmp); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := root.Rename(tmp, name); err != nil {
			root.Remove(tmp)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WithoutCopied is what err, an error of CheckFiles, leaves once the
// links of links are made relative: nil when they were all it named.
func WithoutCopied(err error, links []CopiedLink) error {
	var be *BindError
	if !errors.As(err, &be) || len(be.Shared) > 0 {
		return err
	}
	rest := &BindError{Dir: be.Dir}
	for _, l := range be.LinksOut {
		copied := false
		for _, c := range links {
			copied = copied || c.Path == l.Path
		}
		if !copied {
			rest.LinksOut = append(rest.LinksOut, l)
		}
	}
	if len(rest.LinksOut) == 0 {
		return nil
	}
	return rest
}

// CopiedLinksWords say what CopiedLinks found and what RelinkCopied
// would do about them, in words for the person, naming at most
// maxNamedFiles.
func CopiedLinksWords(links []CopiedLink) string {
	if len(links) == 0 {
		return ""
	}
	n := min(len(links), maxNamedFiles)
	names := make([]string, n)
	for i, l := range links[:n] {
		names[i] = Printable(l.Path) + " -> " + Printable(l.Target)
	}
	list := strings.Join(names, ", ")
	if more := len(links) - n; more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	what := "link of the extension leads"
	if len(links) > 1 {
		what = "links of the extension lead"
	}
	return fmt.Sprintf("%d %s back into the folder it was copied from, %s (%s): Gemini CLI's install copies a folder with Node's fs.cp, which makes every relative link absolute. Made relative again, as the copy meant, they name the extension's own files, which your consent covers and its sandboxed servers can read.",
		len(links), what, Printable(links[0].From), list)
}
