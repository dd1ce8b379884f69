package discovery

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// resolveToRealPath resolves p as the real client's function of that
// name (gemini-cli 0.61.0 packages/core/src/utils/paths.ts) does: a
// file:// URL becomes a path, percent escapes are decoded (kept as is
// when malformed), the path is made absolute and its symbolic links
// resolved; the parts that do not exist are kept as written below the
// deepest part that does. It is not fsutil.RealPath, which keeps a path
// that does not resolve whole: discovery must match the client.
func resolveToRealPath(p string) string {
	if strings.HasPrefix(p, "file://") {
		if u, err := url.Parse(p); err == nil {
			p = u.Path
		}
	}
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return robustRealPath(abs, 0)
}

func robustRealPath(p string, depth int) string {
	if depth > 255 {
		return p
	}
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r
	}
	if !missing(err) {
		return p
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(p); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			return robustRealPath(target, depth+1)
		}
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(robustRealPath(parent, depth+1), filepath.Base(p))
}

func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.EISDIR)
}

// isSubpath reports whether child is parent or lies below it, comparing
// case-insensitively on macOS as the real client's isSubpath does (gemini-cli
// 0.61.0 packages/core/src/utils/paths.ts).
func isSubpath(parent, child string) bool {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		parent, child = strings.ToLower(parent), strings.ToLower(child)
	}
	return fsutil.Within(parent, child)
}
