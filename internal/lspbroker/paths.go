package lspbroker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Dir is the private folder of this user's broker sockets and logs:
// $XDG_RUNTIME_DIR/gemkit, else gemkit-<uid> in the temporary folder. It
// is made 0700, and refused when it is a link, another user owns it, or
// others may enter it.
func Dir() (string, error) {
	var dir string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		dir = filepath.Join(rt, "gemkit")
	} else {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("gemkit-%d", os.Getuid()))
	}
	// A socket's path must fit in sun_path (104 bytes on macOS, 108 on
	// Linux): a long temporary folder gives way to /tmp.
	if len(dir) > 60 {
		dir = filepath.Join("/tmp", fmt.Sprintf("gemkit-%d", os.Getuid()))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the code intelligence folder: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// Key names a workspace's broker: the workspace, the configuration of
// its servers and gemkit's version (a broker of another version or
// another table of servers is not shared).
func Key(workspace string, config []byte, version string) string {
	h := sha256.New()
	h.Write([]byte(workspace))
	h.Write([]byte{0})
	h.Write(config)
	h.Write([]byte{0})
	h.Write([]byte(version))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// SocketPath is the socket of the broker with key in dir.
func SocketPath(dir, key string) string { return filepath.Join(dir, "codeintel-"+key+".sock") }

// LogPath is the log of the broker with key in dir.
func LogPath(dir, key string) string { return filepath.Join(dir, "codeintel-"+key+".log") }
