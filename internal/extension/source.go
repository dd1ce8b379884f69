package extension

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// What an install's source names, and how it is said: a git URL or a
// folder, a bare repository given as a folder, a URL's secret kept out
// of what is printed, and the request field a person must change. They
// are apart from the install itself, which only takes their answers.

// RequestError is an InstallRequest field that cannot be used as given:
// Field names it ("Subdir" or "Ref"), and the message says what is wrong
// in the request's terms. A command adds the flag that set the field.
type RequestError struct {
	Field string
	Err   error
}

func (e *RequestError) Error() string { return e.Err.Error() }

func (e *RequestError) Unwrap() error { return e.Err }

// subdirError is a RequestError of the Subdir field.
func subdirError(format string, args ...any) error {
	return &RequestError{Field: "Subdir", Err: fmt.Errorf(format, args...)}
}

// isBareRepository reports whether dir looks like a git repository
// without a working tree (git init --bare, or a .git folder): a HEAD
// file, objects and refs folders, and no manifest. It only looks at the
// names, running nothing in a folder that is not the person's own yet.
func isBareRepository(dir string) bool {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	if _, err := root.Lstat(ManifestFile); err == nil {
		return false
	}
	for name, folder := range map[string]bool{"HEAD": false, "objects": true, "refs": true} {
		fi, err := root.Lstat(name)
		if err != nil || fi.IsDir() != folder {
			return false
		}
	}
	return true
}

// bareRepositoryError says how to install from a bare repository given
// as a folder: Gemini CLI 0.61 copies any local path as a folder
// (inferInstallMetadata, packages/cli/src/config/extension-manager.ts),
// which would find no manifest in it; a file:// URL clones it.
func bareRepositoryError(dir, subdir string) error {
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	fix := "gemkit extensions install " + u
	if subdir != "" {
		fix += " --path " + subdir
	}
	return fmt.Errorf("%s is a git repository without a working tree (bare), not an extension's folder; install from it as a git source: %s (add --ref BRANCH for a branch other than the one its HEAD names)", dir, fix)
}

// IsGitURL reports whether source names a git repository rather than a
// local folder.
func IsGitURL(source string) bool {
	for _, p := range []string{"https://", "http://", "ssh://", "git://", "file://", "git+ssh://", "sso://", "git@"} {
		if strings.HasPrefix(source, p) {
			return true
		}
	}
	// scp-like user@host:path
	if at := strings.Index(source, "@"); at > 0 {
		if colon := strings.Index(source[at:], ":"); colon > 1 && !strings.Contains(source[:at], "/") {
			return true
		}
	}
	return false
}

// RedactSource returns source fit to print: a URL's password or token
// ("https://user:TOKEN@host/repo", "https://TOKEN@host/repo") is replaced
// by "***". The install metadata keeps the source as given, since git
// needs it to update.
func RedactSource(source string) string {
	u, err := url.Parse(source)
	if err != nil || u.User == nil || u.Scheme == "" || u.Scheme == "ssh" || u.Scheme == "git+ssh" {
		// ssh user names (git@host) are not secrets.
		return source
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), "***")
	} else {
		u.User = url.User("***")
	}
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}
