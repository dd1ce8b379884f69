package pkgrun

import (
	"context"
	"fmt"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// What the registry would install now, told apart from a pinned tree
// without installing it: an update that finds nothing new fetches only
// the packages' metadata.

// Resolution is what the registry would install for a request now: the
// tree npm resolved, without a package fetched (Resolve).
type Resolution struct {
	// Version is the request's package's version; Registry where it
	// would come from (without credentials).
	Version, Registry string
	lock              npmLock
}

// Resolve asks the registry what Install would install for req now,
// fetching no package: npm resolves the tree and writes its lock alone
// (--package-lock-only), in the same sandbox as Install's, from the
// packages' metadata. An update that finds nothing new (Same) then
// costs the metadata, where installing the tree again to compare it
// fetched every package and wrote and hashed the whole tree (411 MB
// for one published server's) only to remove it.
func (in *Installer) Resolve(ctx context.Context, req Request) (Resolution, error) {
	_, stage, err := in.stage(req, ".resolving-")
	if err != nil {
		return Resolution{}, err
	}
	defer fsutil.RemoveTree(stage)
	run, err := in.npm(ctx, req, stage, true)
	if err != nil {
		return Resolution{}, err
	}
	l, err := lockIn(stage)
	if err != nil {
		return Resolution{}, fmt.Errorf("resolving %s: %w", run.target, err)
	}
	e, ok := l.Packages["node_modules/"+req.Package]
	if !ok || e.Link || e.Version == "" {
		return Resolution{}, fmt.Errorf("resolving %s: npm resolved no package %s", run.target, req.Package)
	}
	r := Resolution{Version: e.Version, Registry: run.registry, lock: l}
	run.prog.resolved(req.Package, r.Version, len(l.installed()))
	return r, nil
}

// Same reports whether the tree dir, which Install made, holds what r
// resolved: the same packages at the same places, each of the same
// version and bytes (its integrity) and as the same kind of entry. The
// lock npm writes without installing leaves out where each package is
// fetched from, which the bytes' integrity makes moot.
func (r Resolution) Same(dir string) (bool, error) {
	l, err := lockIn(dir)
	if err != nil {
		return false, err
	}
	return sameTree(r.lock, l), nil
}

// lockIn reads the lock of the tree dir, through its Root.
func lockIn(dir string) (npmLock, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return npmLock{}, err
	}
	defer root.Close()
	l, _, err := readLock(root)
	return l, err
}

// sameTree reports whether two locks give the same packages at the same
// paths, each of the same name, version, integrity, link and install
// scripts.
func sameTree(a, b npmLock) bool {
	key := func(p lockPackage) lockPackage {
		p.Resolved = ""
		return p
	}
	n := 0
	for path, pa := range a.Packages {
		if path == "" {
			continue
		}
		pb, ok := b.Packages[path]
		if !ok || key(pa) != key(pb) {
			return false
		}
		n++
	}
	for path := range b.Packages {
		if path != "" {
			n--
		}
	}
	return n == 0
}
