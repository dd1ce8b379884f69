package pkgrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Pinned is what a tree was pinned with (extension.Pin's): its folder,
// the package and the integrity the lock gave it, and the SHA-256 of
// the lock.
type Pinned struct {
	Tree, Package, Integrity, Lock string
}

// Verify says whether the tree p.Tree, pinned for the extension ext
// under root, is still the one pinned, nil when it is: a folder of its
// own in the extension's folder of trees, with no link on the way from
// root's folder (a folder swapped for a link would show the server
// other files at the same path), whose package-lock.json is the one
// pinned (its SHA-256) and names the package with the integrity it was
// pinned with. The bytes of the tree's files are the digest's to check
// (extension.Store.ReadContent): any process of the person's may write
// the tree, so neither a switch nor a start takes it on trust.
func Verify(root, ext string, p Pinned) error {
	dir, err := extDir(root, ext)
	if err != nil {
		return err
	}
	if filepath.Dir(p.Tree) != dir || p.Tree == dir {
		return fmt.Errorf("the tree %s is not in %s, where gemkit installs the trees of %s", printable(p.Tree), printable(dir), printable(ext))
	}
	top := filepath.Dir(root)
	for d := p.Tree; fsutil.Within(top, d) && d != top; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			return fmt.Errorf("the tree %s: %w", printable(p.Tree), err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a link, not the folder gemkit installed the tree in (swapped for a link after it was pinned)", printable(d))
		case !fi.IsDir():
			return fmt.Errorf("%s is not a folder", printable(d))
		}
	}
	r, err := fsutil.OpenRoot(p.Tree)
	if err != nil {
		return err
	}
	defer r.Close()
	l, data, err := readLock(r)
	if err != nil {
		return fmt.Errorf("the tree %s: %w", printable(p.Tree), err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != p.Lock {
		return fmt.Errorf("the lock of the tree %s (%s) is not the one pinned", printable(p.Tree), lockName)
	}
	if e := l.Packages["node_modules/"+p.Package]; e.Integrity != p.Integrity {
		return fmt.Errorf("the lock of the tree %s gives %s the integrity %s, not %s as pinned", printable(p.Tree), printable(p.Package), printable(e.Integrity), printable(p.Integrity))
	}
	return nil
}
