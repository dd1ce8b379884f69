package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/shell"
)

// Write stores f as the discovery file of the companion serving the editor
// process pid on port, in dir (Dir() when dir is empty), and returns its
// path. The directory is created when missing, with mode 0700: only the
// user's own clients read it (the real client ignores files of other users:
// verifyAndReadFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts), so nobody else needs even
// the names, which carry pids and ports. The file holds a secret token, so it
// is written with mode 0600 through a temporary file in the same directory
// and a rename: a client never reads half a file. It is not synced to disk
// (fsutil.PublishFile): it describes a running process, and clients wait
// for it.
func Write(dir string, pid, port int, f ide.DiscoveryFile) (string, error) {
	if dir == "" {
		dir = Dir()
	}
	if pid <= 0 {
		return "", fmt.Errorf("discovery file: invalid editor pid %d", pid)
	}
	if port <= 0 || port > 65535 {
		return "", fmt.Errorf("discovery file: invalid port %d", port)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("discovery file: encode: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("discovery file: create directory: %w%s", err, permissionHint(err))
	}
	path := filepath.Join(dir, FileName(pid, port))
	if err := fsutil.PublishFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("discovery file: %w%s", err, permissionHint(err))
	}
	return path, nil
}

// permissionHint says what to do when the discovery directory belongs to
// someone else, as happens when several users share one /tmp.
func permissionHint(err error) string {
	if !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	return " (the directory may belong to another user of a shared temporary directory: set TMPDIR to a directory of your own, for the editor and for the Gemini CLI alike)"
}

// Remove deletes the discovery file at path. A file that is already gone is
// not an error.
func Remove(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove discovery file: %w", err)
	}
	return nil
}

// CleanStale removes from dir (Dir() when empty) the discovery files, and
// their legacy pid-only variants, whose editor process no longer exists,
// and returns the paths it removed. Only files owned by the current user
// are touched; files of live processes are left alone.
func CleanStale(dir string) ([]string, error) {
	return removeMatching(dir, "clean stale discovery files", func(e fs.DirEntry) bool {
		pid, ok := stalePID(e.Name())
		return ok && !ProcessAlive(pid) && ownedEntry(e)
	})
}

// CleanUnserved removes from dir (Dir() when empty) the discovery files of
// the live editor process pid whose port no longer accepts connections on
// 127.0.0.1, except the file of port keep, and returns the paths it removed.
// Such a file is left by an earlier companion of the same editor that was
// killed or crashed (its editor still runs, so CleanStale keeps it); the real
// client tries files of its editor first (sortConnectionFiles in gemini-cli
// 0.61.0 packages/core/src/ide/ide-connection-utils.ts) and could pick it
// over the live one. A companion writes its file only once it listens, so a
// refused connection means nobody will serve that port; a port that is merely
// slow to answer is kept, and so is every file where a refusal cannot be told
// from other failures.
func CleanUnserved(dir string, pid, keep int) ([]string, error) {
	return removeMatching(dir, "clean unserved discovery files", func(e fs.DirEntry) bool {
		p, port, ok := ParseFileName(e.Name())
		// The ownership check comes before the probe, so that only our own
		// files cost a connection attempt.
		return ok && p == pid && port != keep && ownedEntry(e) && refused(port)
	})
}

// removeMatching removes from dir (Dir() when empty) every file for which
// stale is true and returns the removed paths, sorted. A missing dir
// removes nothing; a file that vanishes meanwhile is not an error; what
// names the clean-up in the error when dir cannot be read.
func removeMatching(dir, what string, stale func(fs.DirEntry) bool) ([]string, error) {
	if dir == "" {
		dir = Dir()
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !stale(e) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// ownedEntry reports whether e is a file of the current user, the only
// files a companion may clean up.
func ownedEntry(e fs.DirEntry) bool {
	info, err := e.Info()
	return err == nil && ownedByCurrentUser(info)
}

// Listens reports whether a companion's port answers on 127.0.0.1: one
// killed under its running editor (the terminal front-end's shell) leaves
// a file whose port is closed, which serves nothing. A file without a
// port (stdio only) is taken as serving.
func Listens(port int) bool {
	if port == 0 {
		return true
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// refused reports whether a connection to 127.0.0.1:port is refused.
func refused(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// stalePID returns the pid a discovery file's name carries, for both the
// current and the legacy naming.
func stalePID(name string) (int, bool) {
	if pid, _, ok := ParseFileName(name); ok {
		return pid, true
	}
	if !strings.HasPrefix(name, ide.DiscoveryFilePrefix) || !strings.HasSuffix(name, ide.DiscoveryFileSuffix) {
		return 0, false
	}
	mid := strings.TrimSuffix(strings.TrimPrefix(name, ide.DiscoveryFilePrefix), ide.DiscoveryFileSuffix)
	pid, err := strconv.Atoi(mid)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != mid {
		return 0, false
	}
	return pid, true
}

// Env is the set of environment variables a companion gives the terminals
// of its editor, so that a CLI started there finds it even without reading
// the discovery file.
func Env(f ide.DiscoveryFile, pid int) map[string]string {
	env := map[string]string{
		ide.EnvWorkspacePath: f.WorkspacePath,
	}
	if f.Port > 0 {
		env[ide.EnvServerPort] = strconv.Itoa(f.Port)
	}
	if f.AuthToken != "" {
		env[ide.EnvAuthToken] = f.AuthToken
	}
	if pid > 0 {
		env[ide.EnvPID] = strconv.Itoa(pid)
	}
	return env
}

// ExportLines renders env as POSIX shell `export NAME=value` lines in
// name order, each value quoted by shell.Quote where it needs it, safe to
// eval in sh, bash and zsh.
func ExportLines(env map[string]string) string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "export %s=%s\n", k, shell.Quote(env[k]))
	}
	return b.String()
}

// JoinWorkspace joins workspace folders with the OS path-list separator,
// the form of a discovery file's workspacePath.
func JoinWorkspace(paths []string) string {
	return strings.Join(paths, string(os.PathListSeparator))
}
