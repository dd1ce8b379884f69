package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// Contents is what a discovery file (or a Qwen Code lock file) says, read
// the way the real client reads it (getConnectionConfigFromFile in
// gemini-cli 0.61.0 packages/core/src/ide/ide-connection-utils.ts):
// leniently, any JSON object will do, and each field is taken only when it
// has a usable type. Absent fields stay nil so that the environment
// fallbacks apply exactly where the real client applies them. It is what
// [Write] writes ([ide.DiscoveryFile]) as a reader finds it.
type Contents struct {
	// Port is the port as the real client would dial it (parseInt of the
	// value), 0 when absent or unusable; PortText is the value as
	// JavaScript's String() renders it, for the GEMINI_CLI_IDE_SERVER_PORT
	// tie-break.
	Port     int
	PortText string
	// WorkspacePath is nil when the field is absent (or null).
	WorkspacePath *string
	// AuthToken is nil when the field is absent (or null).
	AuthToken *string
	IDEInfo   *ide.IDEInfo
	Stdio     *ide.StdioConfig
	// Raw holds every field as written, for checks and reports.
	Raw map[string]json.RawMessage
}

// ParseContents reads the content of a discovery file. Like the real client
// (verifyAndReadFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts) it accepts any JSON object
// and rejects everything else.
func ParseContents(data []byte) (*Contents, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return nil, fmt.Errorf("parse discovery file: %w", err)
	}
	c := &Contents{Raw: raw}
	if v, ok := raw["port"]; ok {
		var n float64
		var s string
		switch {
		case json.Unmarshal(v, &n) == nil:
			c.PortText = jsNumberString(n)
			if p, ok := ParseJSInt(c.PortText); ok {
				c.Port = p
			}
		case json.Unmarshal(v, &s) == nil:
			c.PortText = s
			if p, ok := ParseJSInt(s); ok {
				c.Port = p
			}
		}
	}
	if v, ok := raw["workspacePath"]; ok {
		var s *string
		if json.Unmarshal(v, &s) == nil && s != nil {
			c.WorkspacePath = s
		}
	}
	if v, ok := raw["authToken"]; ok {
		var s *string
		if json.Unmarshal(v, &s) == nil && s != nil {
			c.AuthToken = s
		}
	}
	if v, ok := raw["ideInfo"]; ok {
		var info ide.IDEInfo
		if json.Unmarshal(v, &info) == nil && (info.Name != "" || info.DisplayName != "") {
			c.IDEInfo = &info
		}
	}
	if v, ok := raw["stdio"]; ok {
		var st ide.StdioConfig
		if json.Unmarshal(v, &st) == nil && st.Command != "" {
			c.Stdio = &st
		}
	}
	return c, nil
}

// jsNumberString renders an integral JSON number the way JavaScript's
// String() does for the values a port can hold.
func jsNumberString(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Candidate is one discovery file seen while choosing.
type Candidate struct {
	// Name is the file name; Path the full path.
	Name, Path string
	// PID and Port are what the name carries (Port is 0 for the legacy
	// name).
	PID, Port int
	// Legacy is set for gemini-ide-server-<pid>.json.
	Legacy bool
	// Contents is nil when the file could not be used; Err says why.
	Contents *Contents
	Err      error
	// Owner is the file's owner uid, Mode its permission bits (valid when
	// the file could be opened).
	Owner int
	Mode  fs.FileMode
	// PIDMatch: the name's pid is the IDE's; Alive: that pid is running.
	PIDMatch, Alive bool
	// Workspace is the result of the real client's workspace check
	// (validateWorkspacePath) for this file against the cwd (nil when it
	// holds the cwd).
	Workspace error
}

// Usable reports whether the real client could read the file
// (verifyAndReadFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func (c *Candidate) Usable() bool { return c.Contents != nil }

// Choice is the outcome of Choose: every file considered, in the real
// client's order, and the one it would use.
type Choice struct {
	Dir    string
	IDEPID int
	Cwd    string
	// Legacy is the legacy file when one exists for IDEPID (used or not).
	Legacy *Candidate
	// Candidates are the files matching the name pattern, sorted as the real
	// client sorts them (sortConnectionFiles in gemini-cli 0.61.0
	// packages/core/src/ide/ide-connection-utils.ts).
	Candidates []*Candidate
	// Chosen is nil when no file would be used.
	Chosen *Candidate
	// Reason says in words why Chosen was picked.
	Reason string
}

// Serving returns the usable files of live companions whose workspace
// holds the cwd, in the order the real client considers them: when there
// are two or more, a CLI started there without GEMINI_CLI_IDE_SERVER_PORT
// connects to the first, whichever companion the person meant.
func (ch *Choice) Serving() []*Candidate {
	var out []*Candidate
	for _, c := range ch.Candidates {
		if c.Contents != nil && c.Err == nil && c.Alive && c.Workspace == nil {
			out = append(out, c)
		}
	}
	return out
}

// ChooseOptions configure Choose.
type ChooseOptions struct {
	// Dir is the discovery directory; "" means Dir().
	Dir string
	// IDEPID is the editor's pid from FindIDEProcess.
	IDEPID int
	// Cwd is the CLI's working directory; "" means os.Getwd().
	Cwd string
	// Getenv reads GEMINI_CLI_IDE_SERVER_PORT; nil means os.Getenv.
	Getenv func(string) string
	// UID is the uid a file must be owned by; nil means os.Getuid() (and
	// no check where that is -1, as on Windows).
	UID *int
	// Alive reports whether a pid runs; nil means signal 0.
	Alive func(pid int) bool
}

// ErrDirMissing is returned (wrapped) when the discovery directory cannot be
// read; the real client then falls back to the environment
// (getConnectionConfigFromFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
var ErrDirMissing = errors.New("the discovery directory cannot be read")

// Choose picks the discovery file the real client would pick
// (getConnectionConfigFromFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts) for the editor process
// IDEPID from the directory Dir, with its rules: the legacy file first;
// otherwise every file matching the name pattern and owned by this uid,
// sorted by pid match, then alive, then larger pid; of those whose workspace
// holds the cwd, the only one, or the one whose port is
// GEMINI_CLI_IDE_SERVER_PORT, or the first; when none holds the cwd, the
// best-sorted readable file (so that the person gets the "Directory mismatch"
// message naming the editor's folders).
func Choose(o ChooseOptions) (*Choice, error) {
	uid, err := o.fillDefaults()
	if err != nil {
		return nil, err
	}
	ch := &Choice{Dir: o.Dir, IDEPID: o.IDEPID, Cwd: o.Cwd}
	if chooseLegacy(ch, o, uid) {
		return ch, nil
	}
	if err := readCandidates(ch, o, uid); err != nil {
		return ch, err
	}
	realCwd := resolveToRealPath(o.Cwd)
	var valid []*Candidate
	for _, c := range ch.Candidates {
		if c.Contents == nil {
			continue
		}
		c.Workspace = validateWorkspace(c.Contents.WorkspacePath, realCwd)
		if c.Workspace == nil {
			valid = append(valid, c)
		}
	}
	pickCandidate(ch, valid, o.Getenv(ide.EnvServerPort))
	return ch, nil
}

// fillDefaults puts the process's own directory, environment, uid,
// liveness check and working directory in the options a caller left
// empty, so tests can replace each one and the command passes none.
func (o *ChooseOptions) fillDefaults() (uid int, err error) {
	if o.Dir == "" {
		o.Dir = Dir()
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	uid = os.Getuid()
	if o.UID != nil {
		uid = *o.UID
	}
	if o.Alive == nil {
		o.Alive = PIDAlive
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return 0, fmt.Errorf("choose discovery file: %w", err)
		}
		o.Cwd = wd
	}
	return uid, nil
}

// chooseLegacy records the legacy file of the IDE's pid when there is
// one, and chooses it when it reads: the legacy file is read before
// any other. It reports whether the choice is made.
func chooseLegacy(ch *Choice, o ChooseOptions, uid int) bool {
	legacyPath := filepath.Join(o.Dir, LegacyFileName(o.IDEPID))
	if _, err := os.Lstat(legacyPath); err != nil {
		return false
	}
	c := readCandidate(o.Dir, LegacyFileName(o.IDEPID), uid)
	c.PID, c.Legacy, c.PIDMatch, c.Alive = o.IDEPID, true, true, o.Alive(o.IDEPID)
	if c.Contents != nil {
		c.Workspace = ValidateWorkspace(c.Contents.WorkspacePath, o.Cwd)
	}
	ch.Legacy = c
	if c.Contents == nil {
		return false
	}
	ch.Chosen = c
	ch.Reason = fmt.Sprintf("legacy file %s for the IDE pid %d is read first", c.Name, o.IDEPID)
	return true
}

// readCandidates reads every discovery file of the folder into
// ch.Candidates, sorted as they are tried: the IDE's pid first, then
// the living, then the newest pid.
func readCandidates(ch *Choice, o ChooseOptions, uid int) error {
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDirMissing, err)
	}
	for _, e := range entries {
		pid, port, ok := ParseFileName(e.Name())
		if !ok {
			continue
		}
		c := readCandidate(o.Dir, e.Name(), uid)
		c.PID, c.Port = pid, port
		c.PIDMatch = pid == o.IDEPID
		c.Alive = o.Alive(pid)
		ch.Candidates = append(ch.Candidates, c)
	}
	sort.SliceStable(ch.Candidates, func(i, j int) bool {
		a, b := ch.Candidates[i], ch.Candidates[j]
		if a.PIDMatch != b.PIDMatch {
			return a.PIDMatch
		}
		if a.Alive != b.Alive {
			return a.Alive
		}
		return a.PID > b.PID
	})
	return nil
}

// pickCandidate chooses among the files whose workspace holds the
// current directory (valid), the port of envPort breaking a tie; with
// none valid it keeps the best-sorted readable file so the mismatch
// can be told.
func pickCandidate(ch *Choice, valid []*Candidate, envPort string) {
	portMatches := func(c *Candidate) bool {
		return envPort != "" && c.Contents.PortText != "" && c.Contents.PortText == envPort
	}
	switch {
	case len(valid) == 1:
		ch.Chosen = valid[0]
		ch.Reason = "the only discovery file whose workspace holds the current directory"
	case len(valid) > 1:
		for _, c := range valid {
			if portMatches(c) {
				ch.Chosen = c
				ch.Reason = fmt.Sprintf("%d discovery files hold the current directory; its port matches %s=%s", len(valid), ide.EnvServerPort, envPort)
				return
			}
		}
		ch.Chosen = valid[0]
		ch.Reason = fmt.Sprintf("%d discovery files hold the current directory; the first in order (pid match, alive, newest pid)", len(valid))
	default:
		for _, c := range ch.Candidates {
			if c.Contents != nil && portMatches(c) {
				ch.Chosen = c
				ch.Reason = fmt.Sprintf("no discovery file's workspace holds the current directory; its port matches %s (kept for the mismatch message)", ide.EnvServerPort)
				return
			}
		}
		for _, c := range ch.Candidates {
			if c.Contents != nil {
				ch.Chosen = c
				ch.Reason = "no discovery file's workspace holds the current directory; the best-sorted one is kept for the mismatch message"
				return
			}
		}
	}
}

// readCandidate opens, checks the owner of and parses one file, like the real
// client's verifyAndReadFile (which follows symbolic links) in gemini-cli
// 0.61.0 packages/core/src/ide/ide-connection-utils.ts.
func readCandidate(dir, name string, uid int) *Candidate {
	c := &Candidate{Name: name, Path: filepath.Join(dir, name), Owner: -1}
	// Opened without blocking: anyone may create files in a shared
	// temporary folder, and opening a named pipe would otherwise wait for
	// a writer forever.
	f, err := openNonBlocking(c.Path)
	if err != nil {
		c.Err = fmt.Errorf("cannot open: %w", err)
		return c
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.Err = fmt.Errorf("cannot stat: %w", err)
		return c
	}
	c.Mode = st.Mode().Perm()
	c.Owner = fileOwner(st)
	if uid >= 0 && c.Owner >= 0 && c.Owner != uid {
		c.Err = &OwnerError{Owner: c.Owner, UID: uid}
		return c
	}
	c.Contents, c.Err = readContents(f, st)
	return c
}

// readContents reads and parses an open discovery or lock file of at most
// 1 MiB. It must be a regular file: the real clients (verifyAndReadFile)
// cannot parse others either (a directory fails to read, a device reads as
// no JSON).
func readContents(f *os.File, st fs.FileInfo) (*Contents, error) {
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	return ParseContents(data)
}

// readRegular reads the file at path, when it is a regular file, up to
// 1 MiB, as readContents does; a lock file of another CLI that cannot be
// read is skipped, as that CLI skips it, so no error is kept. It opens
// without blocking: a FIFO planted under the name must not hang a scan.
func readRegular(path string) ([]byte, bool) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, false
	}
	return data, true
}

// OwnerError says a discovery file belongs to another user, so the real
// client ignores it.
type OwnerError struct{ Owner, UID int }

func (e *OwnerError) Error() string {
	return fmt.Sprintf("owned by uid %d, not by this user (uid %d); the CLI ignores it", e.Owner, e.UID)
}

// PIDAlive reports whether pid runs, as the real client's signal-0 probe does
// (isPidAlive in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts): a permission error still
// means the process exists.
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return pidAlive(pid)
}

// The three workspace errors the real client shows, with its wording
// (validateWorkspacePath in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
var (
	// ErrNoWorkspace: neither the discovery file nor the environment says
	// which folders the editor has open.
	ErrNoWorkspace = errors.New("Failed to connect to IDE companion extension. Please ensure the extension is running. To install the extension, run /ide install.")
	// ErrEmptyWorkspace: the editor has no folder open.
	ErrEmptyWorkspace = errors.New("To use this feature, please open a workspace folder in your IDE and try again.")
)

// MismatchError: the cwd is outside every folder the editor has open.
type MismatchError struct {
	// Folders are the editor's folders, resolved to real paths.
	Folders []string
	// CLI names the CLI in the message; "" is Gemini CLI.
	CLI string
}

func (e *MismatchError) Error() string {
	cli := e.CLI
	if cli == "" {
		cli = "Gemini CLI"
	}
	return "Directory mismatch. " + cli + " is running in a different location than the open workspace in the IDE. Please run the CLI from one of the following directories: " + strings.Join(e.Folders, ", ")
}

// ValidateWorkspace is the real client's workspace check
// (validateWorkspacePath in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts): workspacePath (nil when
// unknown) is split on the OS path list separator, each entry resolved to its
// real path, and cwd's real path must lie inside one. It returns nil,
// ErrNoWorkspace, ErrEmptyWorkspace or a *MismatchError.
func ValidateWorkspace(workspacePath *string, cwd string) error {
	return validateWorkspace(workspacePath, resolveToRealPath(cwd))
}

func validateWorkspace(workspacePath *string, realCwd string) error {
	return matchWorkspace(workspacePath, realCwd, workspaceFolders, "")
}

// workspaceFolders splits a workspacePath as the real client does
// (validateWorkspacePath): on the OS path list separator. The real client
// resolves an empty entry to its own cwd, which makes "a:" match every
// directory; that is a bug we do not copy.
func workspaceFolders(v string) []string {
	var out []string
	for _, p := range strings.Split(v, string(os.PathListSeparator)) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// matchWorkspace is the workspace check of Gemini CLI and of Qwen Code
// (cli, "" for Gemini CLI), which split workspacePath into folders each
// in its own way (split): realCwd must lie inside the real path of one.
func matchWorkspace(workspacePath *string, realCwd string, split func(string) []string, cli string) error {
	if workspacePath == nil {
		return ErrNoWorkspace
	}
	if *workspacePath == "" {
		return ErrEmptyWorkspace
	}
	var folders []string
	for _, p := range split(*workspacePath) {
		folders = append(folders, resolveToRealPath(p))
	}
	for _, f := range folders {
		if isSubpath(f, realCwd) {
			return nil
		}
	}
	return &MismatchError{Folders: folders, CLI: cli}
}

// ReadOwn reads the discovery file (or Qwen Code lock file) at path with
// the real client's checks (verifyAndReadFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts): a regular file owned by
// this user, holding a JSON object.
func ReadOwn(path string) (*Contents, error) {
	c := readCandidate(filepath.Dir(path), filepath.Base(path), os.Getuid())
	if c.Err != nil {
		return nil, fmt.Errorf("%s: %w", path, c.Err)
	}
	return c.Contents, nil
}
