package toolrun

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/errpath"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// refusalHint names the permission behind a failure whose stderr shows
// the sandbox refusing something (a write to the read-only root, a path
// Landlock denies, no network), so that the extension's author knows what
// to declare: the tool's own traceback says only "Read-only file system".
// pol is the policy the tool ran under, resolved; agree is the command
// that records consent again, "" when the runner names none. It returns
// "" when the stderr shows no refusal; denied says the proxy refused a
// connection (already reported as it happened).
func refusalHint(pol permission.Resolved, stderr string, denied bool, agree string) string {
	p := pol.Policy
	read, write := p.Read.Effective(), p.Write.Effective()
	fix := "; if the tool needs more, declare it in " + extension.ManifestFile + " and agree again"
	if agree != "" {
		fix += " (" + agree + ")"
	}
	erofs := strings.Contains(stderr, "Read-only file system") || strings.Contains(stderr, "EROFS")
	eacces := strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "EACCES") || strings.Contains(stderr, "EPERM")
	if erofs || eacces {
		if h := noNewEntryHint(pol, stderr); h != "" {
			return h + fix
		}
	}
	switch {
	case erofs:
		if write == permission.AccessNone {
			return `gemkit: the sandbox refused a write: this tool may write no file (permissions.filesystem.write is "none")` + fix
		}
		return fmt.Sprintf("gemkit: the sandbox refused a write: this tool may write %s (permissions.filesystem.write is %q)", writeScopeWords(pol, write), write) + fix
	case eacces:
		return fmt.Sprintf("gemkit: the sandbox may have refused this: the tool may read %s and write %s (permissions.filesystem.read is %q, .write is %q)",
			scopeWords(read), writeScopeWords(pol, write), read, write) + fix
	case len(p.AllowedHosts) == 0 && (strings.Contains(stderr, "Network is unreachable") || strings.Contains(stderr, "ENETUNREACH") ||
		strings.Contains(stderr, "name resolution") || strings.Contains(stderr, "Name or service not known") || strings.Contains(stderr, "ENOTFOUND") || strings.Contains(stderr, "EAI_AGAIN")):
		return "gemkit: the sandbox gives this tool no network (permissions.network.allowedHosts is empty)" + fix
	case denied:
		return "gemkit: the sandbox refused a connection (see above): permissions.network.allowedHosts lists the hosts this tool may reach" + fix
	}
	return ""
}

// scopeWords says what a filesystem scope covers.
func scopeWords(a permission.Access) string {
	switch a {
	case permission.AccessNone:
		return "no file"
	case permission.AccessWorkspace:
		return "only in the workspace"
	case permission.AccessHome:
		return "only in the workspace and your home folder"
	}
	return "anywhere"
}

// writeScopeWords says where a write scope lets a tool write: under
// write: home not directly in the folders readOnlyFolders names.
func writeScopeWords(pol permission.Resolved, a permission.Access) string {
	if dirs := readOnlyFolders(pol, a); a == permission.AccessHome && len(dirs) > 0 {
		return "in the workspace and inside the folders of your home, but no new file or folder directly in " + tildeList(pol.Home, dirs)
	}
	return scopeWords(a)
}

// readOnlyFolders are the folders of a writable scope a tool may not add
// to or remove from: the sandbox splits the scope around each closed
// folder (gemkit's own, every extension's, the secrets') and gives the
// folders on the way to it, from the scope's root, no write right, only
// their other entries (docs/sandbox-design.md, "The extension's own
// folder is read-only"). Under write: home that is the home folder itself and, in
// it, ~/.config, ~/.gemini and the like.
func readOnlyFolders(pol permission.Resolved, write permission.Access) []string {
	var root string
	switch write {
	case permission.AccessHome:
		root = pol.Home
	case permission.AccessFull:
		root = "/"
	default:
		return nil
	}
	if root == "" {
		return nil
	}
	var dirs []string
	for _, c := range pol.Closed {
		if c == root || !fsutil.Within(root, c) {
			continue
		}
		for d := filepath.Dir(c); ; d = filepath.Dir(d) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
			if d == root || d == filepath.Dir(d) {
				break
			}
		}
	}
	if write == permission.AccessHome && !slices.Contains(dirs, root) {
		// The protected names at the home folder's top are left out of
		// the scope, so it takes no new entries even with nothing closed.
		dirs = append(dirs, root)
	}
	slices.Sort(dirs)
	return dirs
}

// noNewEntryHint is the refusal of a write whose path, named in stderr,
// would be a new entry in a folder the scope leaves read-only
// (readOnlyFolders): it says which folder, why and where the tool can
// write; "" when stderr names no such path.
func noNewEntryHint(pol permission.Resolved, stderr string) string {
	write := pol.Write.Effective()
	dirs := readOnlyFolders(pol, write)
	if len(dirs) == 0 {
		return ""
	}
	for _, path := range errpath.Paths(stderr) {
		if !slices.Contains(dirs, filepath.Dir(path)) || slices.Contains(dirs, path) {
			continue
		}
		return fmt.Sprintf("gemkit: the sandbox refused a write: %s would be a new entry directly in %s, which is read-only for this tool. Under permissions.filesystem.write %q the tool writes in the workspace and inside the other folders of %s, but adds and removes nothing directly in %s: those folders lead to gemkit's own and every extension's code and hold what other programs run or read at start-up. Write into a folder of its own instead (such as %s)",
			tilde(pol.Home, path), tilde(pol.Home, filepath.Dir(path)), write, scopeRootWords(pol, write), tildeList(pol.Home, dirs), tilde(pol.Home, filepath.Join(filepath.Dir(path), "<a folder>", filepath.Base(path))))
	}
	return ""
}

func scopeRootWords(pol permission.Resolved, write permission.Access) string {
	if write == permission.AccessHome {
		return "your home folder"
	}
	return "the filesystem"
}

// tilde writes path under home as ~/….
func tilde(home, path string) string {
	if home != "" && path == home {
		return "~"
	}
	if home != "" && fsutil.Within(home, path) {
		return "~/" + strings.TrimPrefix(path, home+"/")
	}
	return path
}

func tildeList(home string, dirs []string) string {
	shown := make([]string, len(dirs))
	for i, d := range dirs {
		shown[i] = tilde(home, d)
	}
	return strings.Join(shown, ", ")
}
