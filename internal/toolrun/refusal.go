package toolrun

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

// refusalHint names the permission behind a failure whose stderr shows
// the sandbox refusing something (a write to the read-only root, a path
// Landlock denies, no network), so that the extension's author knows what
// to declare: the tool's own traceback says only "Read-only file system".
// p is the policy the tool ran under; agree is the command that records
// consent again, "" when the runner names none. It returns "" when the
// stderr shows no refusal; denied says the proxy refused a connection
// (already reported as it happened).
func refusalHint(p permission.Policy, stderr string, denied bool, agree string) string {
	read, write := p.Read.Effective(), p.Write.Effective()
	fix := "; if the tool needs more, declare it in " + extension.ManifestFile + " and agree again"
	if agree != "" {
		fix += " (" + agree + ")"
	}
	switch {
	case strings.Contains(stderr, "Read-only file system") || strings.Contains(stderr, "EROFS"):
		if write == permission.AccessNone {
			return `gemkit: the sandbox refused a write: this tool may write no file (permissions.filesystem.write is "none")` + fix
		}
		return fmt.Sprintf("gemkit: the sandbox refused a write: this tool may write %s (permissions.filesystem.write is %q)", scopeWords(write), write) + fix
	case strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "EACCES") || strings.Contains(stderr, "EPERM"):
		return fmt.Sprintf("gemkit: the sandbox may have refused this: the tool may read %s and write %s (permissions.filesystem.read is %q, .write is %q)",
			scopeWords(read), scopeWords(write), read, write) + fix
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
		return "only in your home folder"
	}
	return "anywhere"
}
