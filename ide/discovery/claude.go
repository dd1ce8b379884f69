package discovery

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// ClaudeLock is the lock file through which Claude Code finds an IDE
// server: <port>.lock in ClaudeLockDir. The port is the file name; the CLI
// connects to ws://127.0.0.1:<port> with AuthToken in the
// X-Claude-Code-Ide-Authorization header when one of WorkspaceFolders
// contains its working directory (or the port equals
// CLAUDE_CODE_SSE_PORT), and deletes a lock whose PID is dead.
type ClaudeLock struct {
	PID              int      `json:"pid"`
	WorkspaceFolders []string `json:"workspaceFolders"`
	IDEName          string   `json:"ideName"`
	Transport        string   `json:"transport"`
	AuthToken        string   `json:"authToken"`
}

// ClaudeEnvPort is the variable that names the port of the IDE server a
// Claude Code in the editor's terminal connects to.
const ClaudeEnvPort = "CLAUDE_CODE_SSE_PORT"

// ClaudeLockDir is where Claude Code reads lock files:
// $CLAUDE_CONFIG_DIR/ide, else ~/.claude/ide (ide.AgentClaude.LockFolder;
// a relative $CLAUDE_CONFIG_DIR is taken from the current directory).
// getenv and home are the process's environment and home directory.
func ClaudeLockDir(getenv func(string) string, home string) string {
	if d := ide.AgentClaude.LockFolder(getenv, home, ""); d != "" {
		return d
	}
	return filepath.Join(home, ide.AgentClaude.HomeDir, ide.AgentClaude.LockDir)
}

// ClaudeLockName is the name of the lock file of a server on port.
func ClaudeLockName(port int) string { return strconv.Itoa(port) + ".lock" }

// WriteClaudeLock stores l as the lock file of the server on port in dir
// and returns its path. As for the discovery file, the directory is made
// with mode 0700 and the file (it holds the token) is written with mode
// 0600 through a temporary file and a rename.
func WriteClaudeLock(dir string, port int, l ClaudeLock) (string, error) {
	if port <= 0 || port > 65535 {
		return "", fmt.Errorf("claude lock file: invalid port %d", port)
	}
	if l.WorkspaceFolders == nil {
		l.WorkspaceFolders = []string{}
	}
	data, err := json.Marshal(l)
	if err != nil {
		return "", fmt.Errorf("claude lock file: encode: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("claude lock file: create directory: %w", err)
	}
	path := filepath.Join(dir, ClaudeLockName(port))
	if err := fsutil.PublishFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("claude lock file: %w", err)
	}
	return path, nil
}

// CleanUnservedClaude removes from dir the Claude Code lock files of the
// live editor process pid whose port no longer accepts connections on
// 127.0.0.1, except the file of port keep, and returns the paths it
// removed. Such a file is left by an earlier companion of the same editor
// that was killed or crashed. Claude Code 2.1.330 deletes a lock file only
// when its pid has ended (or, without a pid, when its port is closed), so
// it keeps this one; and, started without CLAUDE_CODE_SSE_PORT, it
// connects only when exactly one lock file's workspaceFolders holds its
// working directory, looking again every second for 30 s: with the stale
// file beside the live one, it connects to neither. A companion writes its
// lock file only once it listens, so a refused connection means nobody
// will serve that port; a port merely slow to answer is kept, and so is
// every file where a refusal cannot be told from other failures.
func CleanUnservedClaude(dir string, pid, keep int) ([]string, error) {
	return removeMatching(dir, "clean unserved claude code lock files", func(e fs.DirEntry) bool {
		port, ok := claudeLockPort(e.Name())
		if !ok || port == keep || !ownedEntry(e) {
			return false
		}
		// The pid is read, and the port probed, only for our own files.
		l := readClaudeLock(filepath.Join(dir, e.Name()))
		return l != nil && l.PID == pid && refused(port)
	})
}

// claudeLockPort is the port a lock file's name carries: <port>.lock.
func claudeLockPort(name string) (int, bool) {
	s, ok := strings.CutSuffix(name, ".lock")
	if !ok {
		return 0, false
	}
	port, err := strconv.Atoi(s)
	if err != nil || port <= 0 || port > 65535 || strconv.Itoa(port) != s {
		return 0, false
	}
	return port, true
}

// readClaudeLock reads a lock file, or nil when it is not a regular file
// or cannot be read or parsed.
func readClaudeLock(path string) *ClaudeLock {
	data, ok := readRegular(path)
	if !ok {
		return nil
	}
	var l ClaudeLock
	if json.Unmarshal(data, &l) != nil {
		return nil
	}
	return &l
}
