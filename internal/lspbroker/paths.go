package lspbroker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// Dirs are every folder a gemkit process of this user may take as its
// broker folder (gemkitdir.MakeRuntime), whatever its environment (gemkitdir.RuntimeDirs of the
// runtime folders named by runtimes and this process's, and of the
// temporary folders tmps and os.TempDir): the folders closed to every
// sandboxed process, since the sockets, locks and logs in them are
// gemkit's.
func Dirs(runtimes, tmps []string) []string {
	return gemkitdir.RuntimeDirs(append(append([]string(nil), runtimes...), os.Getenv("XDG_RUNTIME_DIR")),
		append(append([]string(nil), tmps...), os.TempDir()), os.Getuid())
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
