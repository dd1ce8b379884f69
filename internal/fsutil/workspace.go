package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Workspace resolves a workspace folder the one way every command does:
// absolute, cleaned and with its symbolic links resolved, so that a
// workspace reached through a link is the same workspace (one broker, one
// companion, one set of protected paths) as the folder itself. A folder
// that is missing, or a path that is not a folder, is an error naming it.
//
// Whether the folder may be a workspace at all (not the home folder, nor
// a folder that holds it, such as /) is the sandbox's to say, where a
// tool is given the workspace (sandbox.HomeWorkspaceError).
func Workspace(path string) (string, error) {
	if path == "" {
		return "", errors.New("no workspace folder given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("workspace %s: no such folder", path)
	}
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", path, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a folder", path)
	}
	return real, nil
}
