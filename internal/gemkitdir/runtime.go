package gemkitdir

import (
	"fmt"
	"os"
)

// MakeRuntime makes this process's runtime folder (RuntimeFor of
// $XDG_RUNTIME_DIR and os.TempDir()) and returns it: the private folder
// of the code-intelligence brokers' sockets, locks and logs and of the
// hooks' warm sandboxes' sockets. It is made 0700, and refused when it
// is a link or another user owns it; one of this user's that others may
// enter is made 0700. Every folder it may be (RuntimeDirs) is closed to
// every sandboxed process, and what is opened in it is opened without
// following links.
func MakeRuntime() (string, error) {
	dir := RuntimeFor(os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), os.Getuid())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the code intelligence folder: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}
