package cli

import (
	"fmt"
	"os"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// resolveWorkspace is the workspace a command works in: flag (its
// --workspace, or an ACP session's folder), else the run's folder (a.cwd,
// else the process's), resolved by fsutil.Workspace as every command
// resolves it: absolute, cleaned, links resolved.
func (a *app) resolveWorkspace(flag string) (string, error) {
	ws := flag
	if ws == "" {
		ws = a.cwd
	}
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("current folder: %w", err)
		}
	}
	return fsutil.Workspace(ws)
}
