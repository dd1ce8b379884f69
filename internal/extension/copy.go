package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// copyTree copies the folder src to dst (which must not exist): files with
// their permission bits, symlinks as symlinks (validation rejects tools
// and docs reached through them), other special files skipped. Both are
// touched through fsutil.Roots: src is the person's folder but what is
// below it is the extension's, and a link there is copied, never
// followed. It returns the number and total size of the files, for the
// progress line, and the links that lead out of the folder ("rel ->
// target"), which the sandbox does not follow.
func copyTree(ctx context.Context, src, dst string) (files int, size int64, out []string, err error) {
	return copyTreeAs(ctx, src, dst, copyOptions{})
}

// copyOptions change what copyTreeAs copies, and how.
type copyOptions struct {
	// leaveOut, when set, names the paths (slash, relative to the
	// folder) not copied; a folder left out is not entered.
	leaveOut func(rel string, dir bool) bool
	// exactModes gives each file its source's permission bits whatever
	// the umask, as consent's digest binds them.
	exactModes bool
}

// copyTreeAs is copyTree with o.
func copyTreeAs(ctx context.Context, src, dst string, o copyOptions) (files int, size int64, out []string, err error) {
	from, err := fsutil.OpenRoot(src)
	if err != nil {
		return 0, 0, nil, err
	}
	defer from.Close()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return 0, 0, nil, err
	}
	to, err := fsutil.OpenRoot(dst)
	if err != nil {
		return 0, 0, nil, err
	}
	defer to.Close()
	err = from.Walk(".", func(dir *fsutil.Root, rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		target := filepath.FromSlash(rel)
		if o.leaveOut != nil && o.leaveOut(rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return to.Mkdir(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := dir.Readlink(d.Name())
			if err != nil {
				return err
			}
			if _, ok := linkOut(from, target, link); ok {
				out = append(out, target+" -> "+link)
			}
			return to.Symlink(link, target)
		case info.Mode().IsRegular():
			n, err := copyFile(dir, d.Name(), to, target, info.Mode().Perm())
			files++
			size += n
			if err == nil && o.exactModes {
				err = to.Chmod(target, info.Mode().Perm())
			}
			return err
		}
		return nil
	})
	if err == nil {
		// The folder itself keeps its mode too, once it is filled.
		if fi, serr := from.Stat("."); serr == nil {
			err = to.Chmod(".", fi.Mode().Perm()|0o700)
		}
	}
	return files, size, out, err
}

// outLinksWords say that the links out, as copyTree lists them, were
// copied as they are, and what that does: Gemini CLI follows them, and
// gemkit's sandbox shows a server or tool only the extension's folder
// (and the workspace and its runtime), so what they lead to is missing
// there. "" when there are none.
func outLinksWords(out []string) string {
	if len(out) == 0 {
		return ""
	}
	shown := out
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(out)-3)
	}
	noun, as := "link", "it is"
	if len(out) > 1 {
		noun, as = "links", "they are"
	}
	return fmt.Sprintf("Kept %d symbolic %s leading out of the folder as %s: %s%s. Gemini CLI follows such links; gemkit's sandbox does not, so a server or tool of the extension that needs what they lead to does not find it there: install from a folder that holds a copy instead (cp -rL).\n",
		len(out), noun, as, strings.Join(shown, ", "), more)
}

// byteSize writes n bytes for people: "512 B", "3.4 KB", "12.0 MB".
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}

// copyFile copies the regular file name of from to dst in to, a new
// file of mode perm, and returns how many bytes it copied. The file is
// read from a descriptor opened beneath from (regular files only).
func copyFile(from *fsutil.Root, name string, to *fsutil.Root, dst string, perm fs.FileMode) (int64, error) {
	in, err := from.Open(name)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := to.CreateNew(dst, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// copyIfMissing copies the file name from the folder src to the folder
// dst, unless dst already has something of that name or src has nothing.
func copyIfMissing(src, dst, name string) error {
	from, err := fsutil.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	fi, err := from.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	to, err := fsutil.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	if _, err := to.Lstat(name); err == nil {
		return nil
	}
	_, err = copyFile(from, name, to, name, fi.Mode().Perm())
	return err
}

// treeDigest hashes an extension folder's content — paths, modes, file
// bytes and symlink targets — leaving out .git, the install metadata and
// the .env settings, so that two fetches of the same version compare
// equal.
func treeDigest(dir string) (string, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	type entry struct{ rel, kind, sum string }
	var entries []entry
	err = root.Walk(".", func(d *fsutil.Root, rel string, e fs.DirEntry) error {
		if e.IsDir() && e.Name() == ".git" {
			return fs.SkipDir
		}
		if rel == InstallMetadataFile || rel == ".env" {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			entries = append(entries, entry{rel, "d", ""})
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := d.Readlink(e.Name())
			if err != nil {
				return err
			}
			entries = append(entries, entry{rel, "l", link})
		case info.Mode().IsRegular():
			f, err := d.Open(e.Name())
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, io.LimitReader(f, maxContentBytes)); err != nil {
				return err
			}
			entries = append(entries, entry{rel, fmt.Sprintf("f%o", info.Mode().Perm()&0o111), hex.EncodeToString(h.Sum(nil))})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", e.rel, e.kind, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
