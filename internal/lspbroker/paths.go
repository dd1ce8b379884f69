package lspbroker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// Dir is the private folder of this user's broker sockets and logs:
// $XDG_RUNTIME_DIR/gemkit, else gemkit-<uid> in the temporary folder. It
// is made 0700, and refused when it is a link, another user owns it, or
// others may enter it. Every folder it may be (Dirs) is closed to tools,
// and what is opened in it is opened without following links
// (OpenLog, lockFile).
func Dir() (string, error) {
	dir := pick(os.Getenv("XDG_RUNTIME_DIR"), os.TempDir())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the code intelligence folder: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// pick is the broker folder for a runtime folder (XDG_RUNTIME_DIR, "" when
// unset) and a temporary folder.
func pick(runtime, tmp string) string {
	var dir string
	if runtime != "" && filepath.IsAbs(runtime) {
		dir = gemkitdir.Runtime(runtime)
	} else {
		dir = gemkitdir.TempRuntime(tmp, os.Getuid())
	}
	// A socket's path must fit in sun_path (104 bytes on macOS, 108 on
	// Linux): a long temporary folder gives way to /tmp.
	if len(dir) > 60 {
		dir = gemkitdir.TempRuntime("/tmp", os.Getuid())
	}
	return dir
}

// Dirs are every folder a gemkit process of this user may take as its
// broker folder, whatever its environment (the runtime folders named by
// runtimes, this process's and the system's default one, and the
// temporary folders tmps, os.TempDir and /tmp): the folders to close to
// every tool, since the sockets, locks and logs in them are gemkit's.
// /tmp/gemkit-<uid> also holds the records of gemkit's servers
// (permission.RecordDirs).
func Dirs(runtimes, tmps []string) []string {
	var out []string
	add := func(d string) {
		d = filepath.Clean(d)
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	uid := os.Getuid()
	for _, rt := range append(append([]string(nil), runtimes...), os.Getenv("XDG_RUNTIME_DIR"), fmt.Sprintf("/run/user/%d", uid)) {
		if rt != "" && filepath.IsAbs(rt) {
			add(pick(rt, ""))
		}
	}
	for _, t := range append(append([]string(nil), tmps...), os.TempDir(), "/tmp") {
		if t != "" && filepath.IsAbs(t) {
			add(pick("", t))
		}
	}
	return out
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
