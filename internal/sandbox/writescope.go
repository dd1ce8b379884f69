package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// The write scope: the folder filesystem.write names, split around what
// no tool may write, with the guarded paths inside it kept read-only
// (bound over, given placeholders, or sealed: written through gemkit).

// writeRules are the write scope rooted at write, split around what no
// tool may write (the extension's folder, closed folders, other
// extensions' folders: writeExclusions) and with its guarded paths kept
// read-only (guardWrites); where guarded names are absent and the scope
// is sealed, the folders leading to them are written through gemkit.
func (p *Policy) writeRules(r *ruleSet, write, ext string, protected []string) error {
	excl, err := p.writeExclusions(r, write, ext, protected)
	if err != nil {
		return err
	}
	// Sealing needs the write scope bound whole: one that leads to a
	// folder split out of it is not sealed.
	r.seal = r.seal && !r.splitReadOnly && !slices.ContainsFunc(excl, func(x string) bool { return fsutil.Within(write, x) })
	gp := &guardPlan{excl: excl, names: map[string]*sealedFolder{}}
	if err := p.guardWrites(r, write, gp); err != nil {
		return err
	}
	grants, ancestors, err := carve(write, append(gp.excl, gp.sealedOut...))
	if err != nil {
		return fmt.Errorf("splitting the writable scope around the extension folder: %w", err)
	}
	if len(gp.sealedOut) > 0 {
		// The folders on the way to an absent protected name: bound
		// writable whole (the write scope's bind covers them), and
		// only read by the tool's own calls: the watch of its
		// writes makes, writes, renames and removes there what is
		// not protected (sealedFolder). Their files get no rule of
		// their own, which would follow a file renamed to a
		// protected name.
		for _, a := range ancestors {
			r.rules = append(r.rules, PathRule{Path: a, Write: true, NoCreate: true, Optional: a != write,
				Why: "filesystem.write=" + string(p.Write) + " (written through gemkit: it holds protected names)"})
			f := gp.folder(a)
			*r.sealed = append(*r.sealed, *f)
		}
		grants = slices.DeleteFunc(grants, func(c carved) bool { return c.file && slices.Contains(ancestors, filepath.Dir(c.path)) })
	}
	for _, c := range grants {
		r.addOptional(c.path, true, c.file, c.path != write, "filesystem.write="+string(p.Write))
	}
	return nil
}

// writeExclusions are the folders split out of the write scope: the
// extension's own, the closed ones, and the other extensions' folders
// inside it (or, with a mount namespace, bound read-only over it:
// overlays). A scope inside one of them is refused.
func (p *Policy) writeExclusions(r *ruleSet, write, ext string, protected []string) ([]string, error) {
	if fsutil.Within(ext, write) {
		return nil, fmt.Errorf("the %s scope %q is inside the extension's own folder %q, which its tools may never write; run the tool from another directory", p.Write, write, ext)
	}
	excl := append([]string{ext, "/proc", "/dev"}, protected...)
	for _, d := range p.ReadOnly {
		real, ok := r.res.existing(d)
		if !ok {
			continue
		}
		if fsutil.Within(real, write) {
			return nil, fmt.Errorf("the %s scope %q is inside %q, the folder of an installed or linked extension, which no tool may write; run the tool from another directory", p.Write, write, real)
		}
		if !fsutil.Within(write, real) {
			continue
		}
		if r.splitReadOnly {
			excl = append(excl, real)
		} else {
			*r.overlays = append(*r.overlays, overlay{path: real})
		}
	}
	return excl, nil
}

// guardPlan is what the guarded paths make of the write scope.
type guardPlan struct {
	// excl are the paths split out of the scope, the guarded ones that
	// are split out among them.
	excl []string
	// sealedOut are the absent guarded names of a sealed scope: split
	// out too, so that their folders are the sealed ones.
	sealedOut []string
	// names are the sealed folders by path, with their protected names.
	names map[string]*sealedFolder
}

// folder is the sealed folder dir, made at its first name.
func (gp *guardPlan) folder(dir string) *sealedFolder {
	if gp.names[dir] == nil {
		gp.names[dir] = &sealedFolder{path: dir}
	}
	return gp.names[dir]
}

// guardWrites keeps the guarded paths (permission.ProtectedPaths) of the
// write scope read-only. In a folder that already leads to a closed one
// (~ under write: home) nothing can be created, so leaving them out of
// the scope is enough; elsewhere they are read-only binds over the
// writable one, and one that is absent is given a placeholder (an empty
// file or folder, by Launcher.Start) to bind over, or, in a sealed
// scope, is left to the watch of the tool's writes.
func (p *Policy) guardWrites(r *ruleSet, write string, gp *guardPlan) error {
	base := append([]string(nil), gp.excl...)
	for _, g := range p.Guarded {
		path := filepath.Clean(g.Path)
		if !filepath.IsAbs(path) || !fsutil.Within(write, path) || path == write {
			continue
		}
		parent, leads, inside := filepath.Dir(path), false, false
		for _, x := range base {
			if fsutil.Within(x, path) {
				inside = true
			}
			if x != parent && fsutil.Within(parent, x) {
				leads = true
			}
		}
		switch {
		case inside:
			continue
		case leads || r.splitReadOnly:
			// A pattern's folder is split too: it takes no new
			// names at all then.
			gp.excl = append(gp.excl, path)
			continue
		case g.Pattern:
			if r.seal {
				f := gp.folder(parent)
				f.patterns = append(f.patterns, filepath.Base(path))
			}
			*r.overlays = append(*r.overlays, p.patternOverlay(g, path))
			continue
		}
		if err := guardName(r, write, path, g.Dir, gp); err != nil {
			return err
		}
	}
	return nil
}

// patternOverlay is the watch of a guarded pattern of names at path,
// keeping the names it matched when the policy was computed (the
// person's own, guarded one by one).
func (p *Policy) patternOverlay(g permission.Guarded, path string) overlay {
	var keep []string
	for _, e := range p.Guarded {
		if ok, _ := filepath.Match(filepath.Base(path), filepath.Base(e.Path)); ok && !e.Pattern && filepath.Dir(e.Path) == filepath.Dir(path) {
			keep = append(keep, filepath.Base(e.Path))
		}
	}
	return overlay{path: path, guarded: true, pattern: true, why: g.Why(), keep: keep}
}

// guardName keeps one guarded name at path read-only: bound over when it
// exists (what a link leads to, where that lies in the scope), given a
// placeholder when absent, or, absent in a sealed scope, split out so
// that its folder is sealed.
func guardName(r *ruleSet, write, path string, dir bool, gp *guardPlan) error {
	fi, err := os.Lstat(path)
	if r.seal {
		f := gp.folder(filepath.Dir(path))
		f.names = append(f.names, filepath.Base(path))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.seal:
		gp.sealedOut = append(gp.sealedOut, path)
	case errors.Is(err, fs.ErrNotExist):
		*r.overlays = append(*r.overlays, overlay{path: path, guarded: true, absent: true, dir: dir})
	case err != nil:
		return fmt.Errorf("%s must stay read-only for the tool: %w", path, err)
	case fi.Mode()&os.ModeSymlink != 0:
		// A link is not a mount point; what it leads to is
		// guarded where it lies in the scope.
		if real, ok := r.res.existing(path); ok && fsutil.Within(write, real) && real != write {
			*r.overlays = append(*r.overlays, overlay{path: real, guarded: true, dir: isDir(real)})
		}
	default:
		*r.overlays = append(*r.overlays, overlay{path: path, guarded: true, dir: fi.IsDir()})
	}
	return nil
}
