package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Qwen Code (@qwen-code/qwen-code 0.24.4) finds a companion through lock
// files of its own rather than Gemini CLI's discovery files: <port>.lock in
// the ide folder of its home ($QWEN_HOME, else ~/.qwen), holding the same
// fields as a discovery file plus ppid, a process whose end makes the CLI
// delete the file (IdeClient.getAllConnectionConfigs and
// cleanupStaleLockFile in its packages/core/src/ide/ide-client.ts).

var qwenLockPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\.lock$`) })

// QwenLockDir is where Qwen Code reads lock files: the ide folder of
// $QWEN_HOME (a leading ~ is the home folder, a relative path is taken
// from the current directory, as Storage.resolvePath does), else of
// home/.qwen. getenv and home are the process's environment and home
// folder; an empty home gives os.TempDir()/.qwen/ide, as Qwen Code does.
func QwenLockDir(getenv func(string) string, home string) string {
	if d := ide.AgentQwen.LockFolder(getenv, home, ""); d != "" {
		return d
	}
	if home == "" {
		return filepath.Join(os.TempDir(), ide.AgentQwen.HomeDir, ide.AgentQwen.LockDir)
	}
	return filepath.Join(home, ide.AgentQwen.HomeDir, ide.AgentQwen.LockDir)
}

// QwenLockName is the name of the lock file of a companion on port.
func QwenLockName(port int) string { return strconv.Itoa(port) + ".lock" }

// QwenLegacyFileName is the older file Qwen Code still reads, directly in
// os.TmpDir(), named after the editor's pid or after
// QWEN_CODE_IDE_SERVER_PORT (getLegacyConnectionConfig).
func QwenLegacyFileName(pidOrPort string) string {
	return "qwen-code-ide-server-" + pidOrPort + ".json"
}

// WriteQwenLock stores f as the lock file of the companion on port in dir
// and returns its path. As for the discovery file, the folder is made with
// mode 0700 and the file (it holds the token) written with mode 0600
// through a temporary file and a rename, so that the CLI never reads half
// a file.
func WriteQwenLock(dir string, port int, f ide.DiscoveryFile) (string, error) {
	if port <= 0 || port > 65535 {
		return "", fmt.Errorf("qwen code lock file: invalid port %d", port)
	}
	f.Port = port
	data, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("qwen code lock file: encode: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("qwen code lock file: create directory: %w", err)
	}
	path := filepath.Join(dir, QwenLockName(port))
	if err := fsutil.PublishFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("qwen code lock file: %w", err)
	}
	return path, nil
}

// CleanStaleQwen removes from dir the lock files of this user that Qwen
// Code itself would delete as stale (cleanupStaleLockFile): those whose
// ppid no longer runs, and those without a ppid whose workspacePath does
// not exist. It returns the paths it removed.
func CleanStaleQwen(dir string) ([]string, error) {
	return removeMatching(dir, "clean stale qwen code lock files", func(e fs.DirEntry) bool {
		if !qwenLockPattern().MatchString(e.Name()) || !ownedEntry(e) {
			return false
		}
		return qwenStale(readQwenLock(filepath.Join(dir, e.Name()))) != ""
	})
}

// readQwenLock reads a lock file's content, or nil when it cannot be read
// or parsed (Qwen Code skips such files and never deletes them).
func readQwenLock(path string) *Contents {
	data, ok := readRegular(path)
	if !ok {
		return nil
	}
	c, err := ParseContents(data)
	if err != nil {
		return nil
	}
	return c
}

// qwenStale says why Qwen Code would delete a lock file of content c, or
// "" when it keeps it (cleanupStaleLockFile): a ppid that no longer runs,
// or, without a ppid, a workspacePath that does not exist (taken whole,
// not split into folders, as the CLI does). The CLI's probe,
// process.kill(ppid, 0), also fails for another user's process; a
// companion's own lock names its own process, so that case is not told
// apart here.
func qwenStale(c *Contents) string {
	if c == nil {
		return ""
	}
	if pid, ok := c.PPID(); ok {
		if !ProcessAlive(pid) {
			return fmt.Sprintf("its ppid %d is not running", pid)
		}
		return ""
	}
	if c.WorkspacePath != nil && *c.WorkspacePath != "" {
		if _, err := os.Stat(*c.WorkspacePath); errors.Is(err, fs.ErrNotExist) {
			return "it has no ppid and its workspacePath " + *c.WorkspacePath + " does not exist"
		}
	}
	return ""
}

// PPID returns the file's ppid field when it is a number other than 0,
// the values Qwen Code probes (a truthy parsed.ppid).
func (c *Contents) PPID() (int, bool) {
	var n float64
	if v, ok := c.Raw["ppid"]; !ok || json.Unmarshal(v, &n) != nil || n == 0 || n != float64(int(n)) {
		return 0, false
	}
	return int(n), true
}
