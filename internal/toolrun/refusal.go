package toolrun

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// refusalHint names the permission behind a failure whose stderr shows
// the sandbox refusing something (a write to the read-only root, a path
// Landlock denies, no network), so that the extension's author knows what
// to declare: the tool's own traceback says only "Read-only file system".
// It returns "" when the stderr shows no refusal; denied says the proxy
// refused a connection (already reported as it happened).
func refusalHint(ext *extension.Extension, stderr string, denied bool) string {
	p := ext.Manifest.EffectivePermissions()
	read, write := p.Filesystem.Read, p.Filesystem.Write
	fix := "; if the tool needs more, declare it in " + extension.ManifestFile + " and agree again (gemkit extensions consent " + ext.Manifest.Name + " --grant)"
	switch {
	case strings.Contains(stderr, "Read-only file system") || strings.Contains(stderr, "EROFS"):
		if write == extension.AccessNone {
			return `gemkit: the sandbox refused a write: this tool may write no file (permissions.filesystem.write is "none")` + fix
		}
		return fmt.Sprintf("gemkit: the sandbox refused a write: this tool may write %s (permissions.filesystem.write is %q)", scopeWords(write), write) + fix
	case strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "EACCES") || strings.Contains(stderr, "EPERM"):
		return fmt.Sprintf("gemkit: the sandbox may have refused this: the tool may read %s and write %s (permissions.filesystem.read is %q, .write is %q)",
			scopeWords(read), scopeWords(write), read, write) + fix
	case len(p.Network.AllowedHosts) == 0 && (strings.Contains(stderr, "Network is unreachable") || strings.Contains(stderr, "ENETUNREACH") ||
		strings.Contains(stderr, "name resolution") || strings.Contains(stderr, "Name or service not known") || strings.Contains(stderr, "ENOTFOUND") || strings.Contains(stderr, "EAI_AGAIN")):
		return "gemkit: the sandbox gives this tool no network (permissions.network.allowedHosts is empty)" + fix
	case denied:
		return "gemkit: the sandbox refused a connection (see above): permissions.network.allowedHosts lists the hosts this tool may reach" + fix
	}
	return ""
}

// scopeWords says what a filesystem scope covers.
func scopeWords(a extension.Access) string {
	switch a {
	case extension.AccessNone:
		return "no file"
	case extension.AccessWorkspace:
		return "only in the workspace"
	case extension.AccessHome:
		return "only in your home folder"
	}
	return "anywhere"
}
