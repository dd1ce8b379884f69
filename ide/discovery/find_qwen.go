package discovery

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// QwenCandidate is one file Qwen Code reads while looking for a companion.
type QwenCandidate struct {
	// Name is the file name; Path the full path.
	Name, Path string
	// Source is how the CLI came to read it.
	Source QwenSource
	// Port is the port the file names (its port field, else its name's).
	Port int
	// Contents is nil when the file cannot be read or is not a JSON object
	// (the CLI skips it silently); Err says why.
	Contents *Contents
	Err      error
	// ModTime orders the scanned files, newest first; Owner is the
	// owner's uid (-1 when unknown) and Mode the permission bits.
	ModTime time.Time
	Owner   int
	Mode    fs.FileMode
	// Stale says why the CLI deletes the file when it scans the folder
	// (qwenStale); "" when it keeps it.
	Stale string
	// Workspace is nil when the file's workspacePath holds the cwd (or,
	// for the env-port and legacy files, when the file has none), else
	// the CLI's reason (ValidateQwenWorkspace).
	Workspace error
}

// QwenSource says how Qwen Code came to read a lock file.
type QwenSource string

// How Qwen Code came to read a lock file: in this order.
const (
	QwenEnvPortFile       QwenSource = "env-port"        // the lock file of QWEN_CODE_IDE_SERVER_PORT
	QwenLegacyPIDFile     QwenSource = "legacy-pid"      // the older file of the editor's pid, in the temporary folder
	QwenLegacyEnvPortFile QwenSource = "legacy-env-port" // the older file of QWEN_CODE_IDE_SERVER_PORT, there too
	QwenScanned           QwenSource = "scan"            // found in the lock folder, newest first
)

// Legacy reports whether c is one of the older files in the temporary
// folder, which current companions no longer write.
func (c *QwenCandidate) Legacy() bool {
	return c.Source == QwenLegacyPIDFile || c.Source == QwenLegacyEnvPortFile
}

// QwenChoice is what Qwen Code decides from the files, before it dials
// (IdeClient.getConnectionConfigFromFile in @qwen-code/qwen-code 0.24.4
// packages/core/src/ide/ide-client.ts).
type QwenChoice struct {
	// Dir is the lock folder; TempDir holds the legacy files.
	Dir, TempDir, Cwd string
	// EnvPort is QWEN_CODE_IDE_SERVER_PORT when it is a valid port.
	EnvPort string
	// EnvLock is the lock file of EnvPort, Legacy the legacy file read
	// (nil when absent).
	EnvLock, Legacy *QwenCandidate
	// Candidates are the lock files of the folder, newest first.
	Candidates []*QwenCandidate
	// Chosen is the file used; nil when none.
	Chosen *QwenCandidate
	Reason string
	// Rejected are the ports of files whose workspace does not hold the
	// cwd, once each; the CLI dials none of them through the environment
	// either.
	Rejected []int
}

// Files are every file the CLI read, in its order: the port variable's
// lock file, the legacy file, then the folder's.
func (ch *QwenChoice) Files() []*QwenCandidate {
	var out []*QwenCandidate
	if ch.EnvLock != nil {
		out = append(out, ch.EnvLock)
	}
	if ch.Legacy != nil {
		out = append(out, ch.Legacy)
	}
	for _, c := range ch.Candidates {
		if ch.EnvLock == nil || c.Path != ch.EnvLock.Path {
			out = append(out, c)
		}
	}
	return out
}

// QwenChooseOptions configure ChooseQwen.
type QwenChooseOptions struct {
	// Dir is the lock folder; "" means QwenLockDir of the environment.
	Dir string
	// TempDir holds the legacy files; "" means os.TempDir().
	TempDir string
	// IDEPID is the editor's pid from the process walk (0: none).
	IDEPID int
	// Cwd is the CLI's directory; "" means os.Getwd().
	Cwd string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// QwenEnvPort returns QWEN_CODE_IDE_SERVER_PORT when Qwen Code takes it:
// digits only, between 1 and 65535 (IdeClient.getPortFromEnv).
func QwenEnvPort(getenv func(string) string) string {
	v := getenv(ide.EnvQwenServerPort)
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return ""
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
		return ""
	}
	return v
}

// ChooseQwen picks the file Qwen Code would use from o.Cwd, with its rules
// (IdeClient.getConnectionConfigFromFile in @qwen-code/qwen-code 0.24.4
// packages/core/src/ide/ide-client.ts): the lock file of
// QWEN_CODE_IDE_SERVER_PORT when its workspace holds the cwd (or it has
// none); then the legacy file of the editor's pid, else of that port, on
// the same terms; then the lock files of the folder, newest first, the
// first whose workspace holds the cwd (files without a workspacePath are
// skipped). It reads only: the files the CLI would delete as stale are
// marked (Stale), not removed, and stay out of the choice as they do for
// the CLI.
func ChooseQwen(o QwenChooseOptions) (*QwenChoice, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Dir == "" {
		home, _ := os.UserHomeDir()
		o.Dir = QwenLockDir(o.Getenv, home)
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("choose qwen code lock file: %w", err)
		}
		o.Cwd = wd
	}
	ch := &QwenChoice{Dir: o.Dir, TempDir: o.TempDir, Cwd: o.Cwd, EnvPort: QwenEnvPort(o.Getenv)}
	reject := func(port int) {
		if port != 0 && !slices.Contains(ch.Rejected, port) {
			ch.Rejected = append(ch.Rejected, port)
		}
	}
	matches := func(c *QwenCandidate) bool {
		if c.Contents.WorkspacePath != nil {
			c.Workspace = ValidateQwenWorkspace(c.Contents.WorkspacePath, o.Cwd)
		}
		return c.Workspace == nil
	}

	if ch.EnvPort != "" {
		c := readQwenCandidate(o.Dir, ch.EnvPort+".lock", QwenEnvPortFile)
		if c.Contents != nil || !os.IsNotExist(c.Err) {
			ch.EnvLock = c
		}
		if c.Contents != nil {
			if matches(c) {
				ch.Chosen, ch.Reason = c, fmt.Sprintf("the lock file of %s=%s", ide.EnvQwenServerPort, ch.EnvPort)
				return ch, nil
			}
			if c.Port == 0 {
				c.Port, _ = strconv.Atoi(ch.EnvPort)
			}
			reject(c.Port)
		}
	}

	var legacy *QwenCandidate
	if o.IDEPID > 0 {
		if c := readQwenCandidate(o.TempDir, QwenLegacyFileName(strconv.Itoa(o.IDEPID)), QwenLegacyPIDFile); c.Contents != nil {
			legacy = c
		}
	}
	if legacy == nil && ch.EnvPort != "" {
		if c := readQwenCandidate(o.TempDir, QwenLegacyFileName(ch.EnvPort), QwenLegacyEnvPortFile); c.Contents != nil {
			legacy = c
		}
	}
	if legacy != nil {
		ch.Legacy = legacy
		if matches(legacy) {
			ch.Chosen, ch.Reason = legacy, "the legacy file "+legacy.Name+" in "+o.TempDir+" is read before the lock folder"
			return ch, nil
		}
		reject(legacy.Port)
		if legacy.Source == QwenLegacyEnvPortFile {
			p, _ := strconv.Atoi(ch.EnvPort)
			reject(p)
		}
	}

	entries, err := os.ReadDir(o.Dir)
	if err != nil && !os.IsNotExist(err) {
		return ch, fmt.Errorf("%w: %w", ErrDirMissing, err)
	}
	for _, e := range entries {
		if !qwenLockPattern().MatchString(e.Name()) {
			continue
		}
		c := readQwenCandidate(o.Dir, e.Name(), QwenScanned)
		if c.Contents != nil {
			c.Stale = qwenStale(c.Contents)
		}
		ch.Candidates = append(ch.Candidates, c)
	}
	sort.SliceStable(ch.Candidates, func(i, j int) bool { return ch.Candidates[i].ModTime.After(ch.Candidates[j].ModTime) })
	for _, c := range ch.Candidates {
		if c.Contents == nil || c.Stale != "" || c.Contents.WorkspacePath == nil {
			continue
		}
		if matches(c) {
			ch.Chosen, ch.Reason = c, "the newest lock file in "+o.Dir+" whose workspace holds the current directory"
			return ch, nil
		}
		reject(c.Port)
	}
	return ch, nil
}

// readQwenCandidate reads one file as Qwen Code does: any JSON object is
// a config; the owner is not checked.
func readQwenCandidate(dir, name string, source QwenSource) *QwenCandidate {
	c := &QwenCandidate{Name: name, Path: filepath.Join(dir, name), Source: source, Owner: -1}
	if n, ok := strings.CutSuffix(name, ".lock"); ok {
		c.Port, _ = strconv.Atoi(n)
	}
	f, err := openNonBlocking(c.Path)
	if err != nil {
		c.Err = err
		return c
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.Err = err
		return c
	}
	c.ModTime, c.Owner, c.Mode = st.ModTime(), fileOwner(st), st.Mode().Perm()
	if c.Contents, c.Err = readContents(f, st); c.Contents != nil && c.Contents.Port != 0 {
		c.Port = c.Contents.Port
	}
	return c
}

// ValidateQwenWorkspace is Qwen Code's workspace check
// (IdeClient.validateWorkspacePath and parseWorkspacePathEnv): the value is
// a JSON array of folders or a path list, relative entries are dropped,
// each folder is resolved to its real path, and cwd's real path must lie
// inside one. It returns nil, ErrNoWorkspace, ErrEmptyWorkspace or a
// *MismatchError naming Qwen Code.
func ValidateQwenWorkspace(workspacePath *string, cwd string) error {
	return matchWorkspace(workspacePath, resolveToRealPath(cwd), qwenWorkspaceFolders, "Qwen Code")
}

// qwenWorkspaceFolders splits a workspacePath as Qwen Code does
// (parseWorkspacePathEnv): a JSON array of strings, else a path list;
// only absolute entries count.
func qwenWorkspaceFolders(v string) []string {
	var list []string
	if !strings.HasPrefix(strings.TrimLeft(v, " \t\r\n"), "[") || json.Unmarshal([]byte(v), &list) != nil {
		list = strings.Split(v, string(os.PathListSeparator))
	}
	var out []string
	for _, p := range list {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}
