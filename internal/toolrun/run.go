// Package toolrun runs an extension's executable tool: it finds the tool,
// checks the call's arguments against the declared ones and turns them
// into flags, asks for (or finds) the person's consent to the extension's
// permissions, picks the interpreter, builds a minimal environment, and
// runs the script under the sandbox with bounded time, output and memory,
// returning its output parsed as the tool declares.
package toolrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Limits a call gets unless it says otherwise.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxOutput = 4 << 20 // bytes of stdout; stderr keeps at most 1 MiB
	maxStderr        = 1 << 20
)

// ConsentStore remembers which permissions the person agreed to, by
// extension name and extension.PermissionsHash. *extension.Store is one.
type ConsentStore interface {
	ConsentGranted(name, hash string) bool
	RecordConsent(name, hash string) error
}

// ContentConsentStore is a ConsentStore that also binds consent to the
// extension's files (extension.ContentDigest): a tool whose code changed
// since the person agreed is shown and asked about again.
// *extension.Store is one; a ConsentStore without it binds to the
// permissions only.
type ContentConsentStore interface {
	ConsentStore
	ConsentContent(name, hash string) (agreed extension.Content, granted bool)
	RecordConsentContent(name, hash string, c extension.Content) error
}

// ConsentRequest is what the person is asked before an extension's tools
// run.
type ConsentRequest struct {
	Extension string
	// Notice says why consent given before does not hold any more: the
	// files that changed since (extension.ContentNotice); "" when there
	// was none to hold. It is a statement of its own, to be shown before
	// Lines and apart from them, not one of the permissions.
	Notice string
	// Lines are the permissions in words (extension.PermissionsSummary).
	Lines []string
}

// Question is q as one question to show: "Extension "x" wants to run
// what.", the Notice as a paragraph of its own (blank lines around it when
// gap is "\n\n", where Markdown would join lines), then the permissions,
// each behind bullet. Every part the extension wrote is made printable.
func (q ConsentRequest) Question(what, gap, bullet string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Extension %q wants to run %s.", extension.Printable(q.Extension), what)
	if q.Notice != "" {
		b.WriteString(gap + extension.Printable(q.Notice) + gap)
	} else {
		b.WriteString(" ")
	}
	b.WriteString("Its tools may:\n")
	for _, l := range q.Lines {
		b.WriteString(bullet + extension.Printable(l) + "\n")
	}
	return b.String()
}

// Asker asks the person whether the extension may run with the
// permissions q describes. It returns an error when it cannot ask.
type Asker func(ctx context.Context, q ConsentRequest) (bool, error)

// Runner runs tools. One Runner serves many calls; it caches resolved
// interpreters.
type Runner struct {
	// Launcher starts the sandboxed process; nil is a default Launcher
	// (refuses what cannot be enforced).
	Launcher *sandbox.Launcher
	// Consent records consent; nil means consent must come from Call.GrantConsent or Ask on every run.
	Consent ConsentStore
	// Ask asks the person; nil means nobody can be asked (no terminal),
	// and a run without recorded consent fails closed.
	Ask Asker
	// Environ is the user's environment, the source of PATH, HOME, the
	// locale and the extension's settings; nil means os.Environ().
	Environ []string
	// Protected are folders closed to every tool whatever its scope, in
	// addition to ~/.gemini (and $GEMINI_CLI_HOME/.gemini), which always
	// are: the extension store's own folder when it lives elsewhere.
	Protected []string
	// ReadOnly are folders no tool may write whatever its scope, in
	// addition to those the Consent store lists when it can
	// (ExtensionFolders, as *extension.Store does: every installed
	// extension's folder and every linked source).
	ReadOnly []string
	// Logger receives debug details; nil is slog.Default().
	Logger *slog.Logger

	runtimes runtimes
	others   otherWrites
	// servers finds the servers running for this user, whose secrets
	// are closed wherever their environment put them.
	servers permission.Locator
}

// Call is one tool invocation.
type Call struct {
	Extension *extension.Extension
	Tool      string
	// Args are the tool's arguments by name, as decoded from JSON or
	// from ParseCLIArgs.
	Args map[string]any
	// Workspace is the folder the tool runs in and the "workspace" scope;
	// empty means the current directory.
	Workspace string
	// Timeout, MaxOutput and MemoryBytes bound the run; zero means the
	// defaults.
	Timeout     time.Duration
	MaxOutput   int64
	MemoryBytes uint64
	// Settings are values of the extension's settings (by envVar) from
	// its settings file, the only source of them: the user's environment
	// is never consulted for a declared name.
	Settings map[string]string
	// GrantConsent records the person's consent given on the command line
	// (--consent) instead of asking.
	GrantConsent bool
}

// Result is what a tool run produced.
type Result struct {
	Tool     string `json:"tool"`
	ExitCode int    `json:"exitCode"`
	// Output is the parsed stdout for output "json", else nil.
	Output json.RawMessage `json:"output,omitempty"`
	// Text is stdout for output "string".
	Text     string           `json:"text,omitempty"`
	Stdout   []byte           `json:"-"`
	Stderr   string           `json:"stderr,omitempty"`
	Duration time.Duration    `json:"durationNs"`
	Denied   []sandbox.Denial `json:"denied,omitempty"`
	// DeniedDropped counts refusals past the distinct ones in Denied.
	DeniedDropped int                 `json:"deniedDropped,omitempty"`
	Warnings      []string            `json:"warnings,omitempty"`
	Enforcement   sandbox.Enforcement `json:"enforcement"`
}

// ToolError is a tool that ran and failed: a non-zero exit, a kill on
// timeout or output overflow, or output that is not what it declared.
type ToolError struct {
	Tool string
	// Msg is the whole account, the tail of the tool's stderr and the
	// permission that refused it (Hint) included, for a model or a log.
	Msg string
	// Brief is Msg without the stderr tail, for a person who has just
	// seen that stderr; Hint names the permission that made the sandbox
	// refuse what the stderr shows, "" when nothing points at one.
	Brief, Hint string
}

// failed is a ToolError whose stderr is worth showing.
func failed(tool, brief, stderr, hint string) *ToolError {
	msg, short := brief+stderrTail(stderr), brief
	if hint != "" {
		msg += "\n" + hint
		short += "\n" + hint
	}
	return &ToolError{Tool: tool, Msg: msg, Brief: short, Hint: hint}
}

func (e *ToolError) Error() string { return fmt.Sprintf("tool %s %s", e.Tool, e.Msg) }

// ConsentError is a run refused because the person has not agreed to the
// extension's permissions and could not be asked, or declined.
type ConsentError struct {
	Extension string
	// Notice is ConsentRequest.Notice: why consent given before does not
	// hold, "" when there was none.
	Notice   string
	Lines    []string
	Declined bool
}

func (e *ConsentError) Error() string {
	perms := strings.Join(e.Lines, "; ")
	switch {
	case e.Declined:
		return fmt.Sprintf("you declined to let extension %s run with these permissions: %s", e.Extension, perms)
	case e.Notice != "":
		return fmt.Sprintf("extension %s needs your consent again before its tools run, and there is no terminal to ask on. %s Its tools may: %s",
			e.Extension, e.Notice, perms)
	}
	return fmt.Sprintf("extension %s needs your consent before its tools run (it may: %s), and there is no terminal to ask on",
		e.Extension, perms)
}

func (r *Runner) environ() []string {
	if r.Environ != nil {
		return r.Environ
	}
	return os.Environ()
}

// resolve resolves the tool's whole policy on this machine, once
// (permission.Resolve): the closed folders (gemkit's and Gemini CLI's
// configuration, the files that hold the tokens of the servers gemkit
// serves or runs, wherever their environment put them, and r.Protected),
// the protected paths in the write scope (node_modules above every
// extension's folder among them), and the folders no program is started
// from: the workspace, and the home folder when a tool of this extension
// or of any installed one may write it.
func (r *Runner) resolve(p permission.Policy, env map[string]string, ws, home, extDir string, folders []string) permission.Resolved {
	in := permission.ClosedInputs{
		ClaudeConfigDir: env["CLAUDE_CONFIG_DIR"], QwenHome: env["QWEN_HOME"], ConfigDir: env["XDG_CONFIG_HOME"],
		TempDirs: []string{env["TMPDIR"], env["TMP"], env["TEMP"], os.TempDir(), "/tmp"}, Extra: r.Protected,
	}
	if h := env[extension.HomeEnv]; filepath.IsAbs(h) {
		in.GeminiHome = h
	}
	return permission.Resolve(p, permission.Where{Workspace: ws, Home: home, Closed: in, OwnFolder: extDir,
		OtherWrites: r.others.writes(r.Consent, folders), ExtensionFolders: append([]string{extDir}, folders...),
		Locator: &r.servers, Getenv: func(k string) string { return env[k] }})
}

// otherWrites keeps the write scopes of the installed extensions between
// runs: loading every manifest costs milliseconds per run with hundreds of
// extensions, so they are loaded again only when a manifest among the
// extension folders changed (its size or time), was added or removed.
type otherWrites struct {
	mu     sync.Mutex
	key    string
	scopes []permission.Access
}

// writes returns the write scopes of the extensions the consent store
// lists (nil when it lists none); folders are the extension folders,
// whose manifests' sizes and times say whether the last answer holds.
func (o *otherWrites) writes(store ConsentStore, folders []string) []permission.Access {
	l, ok := store.(interface {
		List() ([]*extension.Installed, error)
	})
	if !ok {
		return nil
	}
	var key strings.Builder
	for _, f := range folders {
		if fi, err := fsutil.StatIn(f, extension.ManifestFile); err == nil {
			fmt.Fprintf(&key, "%s\x00%d\x00%d\x00", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.scopes != nil && o.key == key.String() {
		return o.scopes
	}
	list, err := l.List()
	if err != nil {
		return nil
	}
	scopes := []permission.Access{}
	for _, in := range list {
		if m := in.Manifest(); m != nil {
			scopes = append(scopes, m.EffectivePermissions().Filesystem.Write)
		}
	}
	o.key, o.scopes = key.String(), scopes
	return scopes
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// Run runs one tool call. A non-nil Result comes back whenever the tool
// ran, also together with a *ToolError.
func (r *Runner) Run(ctx context.Context, c Call) (*Result, error) {
	ext := c.Extension
	if ext == nil || ext.Manifest == nil {
		return nil, errors.New("toolrun: no extension")
	}
	m := ext.Manifest
	tool := m.Tool(c.Tool)
	if tool == nil {
		names := make([]string, len(m.Tools))
		for i, t := range m.Tools {
			names[i] = t.Name
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("extension %s has no tools", m.Name)
		}
		return nil, fmt.Errorf("extension %s has no tool %q (its tools: %s)", m.Name, c.Tool, strings.Join(names, ", "))
	}
	flags, err := Flags(tool, c.Args)
	if err != nil {
		return nil, err
	}
	script, err := scriptPath(ext, tool)
	if err != nil {
		return nil, err
	}
	env := envMap(r.environ())
	home := env["HOME"]
	if home == "" {
		if home, err = os.UserHomeDir(); err != nil {
			return nil, fmt.Errorf("no HOME: %w", err)
		}
	}
	ws := c.Workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, err
	}
	readOnly, err := r.readOnly()
	if err != nil {
		return nil, err
	}
	pol := r.resolve(m.EffectivePermissions().Policy(), env, ws, home, ext.Dir, readOnly)
	if err := r.checkConsent(ctx, ext, c.GrantConsent, boundOutside(pol)); err != nil {
		return nil, err
	}
	ask := func(ctx context.Context, shim string, args []string) (string, error) {
		return r.askShim(ctx, shim, args, env, pol, readOnly)
	}
	interp, err := r.runtimes.resolve(ctx, tool.Runtime, env["PATH"], home, pol.Untrusted, ask)
	if err != nil {
		return nil, err
	}
	// The tool's own PATH leaves out the same folders: a program it
	// starts by name must not be one a tool planted.
	env = withPath(env, pol.SearchPath(env["PATH"]))

	tmp, err := os.MkdirTemp("", "gemkit-tool-")
	if err != nil {
		return nil, fmt.Errorf("private temp dir: %w", err)
	}
	res, err := r.run(ctx, c, ext, tool, script, flags, env, pol, interp, tmp, readOnly)
	// The temp dir goes whatever modes the tool left in it; a temp dir
	// that stays is an error, not a silent leak.
	if rerr := removeTemp(tmp); rerr != nil {
		rerr = fmt.Errorf("tool %s: removing its private temp dir: %w", tool.Name, rerr)
		if err == nil {
			err = rerr
		} else {
			err = errors.Join(err, rerr)
		}
	}
	return res, err
}

// readOnly lists the folders every tool must find read-only.
func (r *Runner) readOnly() ([]string, error) {
	out := append([]string(nil), r.ReadOnly...)
	if l, ok := r.Consent.(interface{ ExtensionFolders() ([]string, error) }); ok {
		dirs, err := l.ExtensionFolders()
		if err != nil {
			return nil, fmt.Errorf("listing the installed extensions, which tools must not change: %w", err)
		}
		out = append(out, dirs...)
	}
	return out, nil
}

func (r *Runner) run(ctx context.Context, c Call, ext *extension.Extension, tool *extension.Tool, script string, flags []string,
	env map[string]string, pol permission.Resolved, interp Interpreter, tmp string, readOnly []string) (*Result, error) {
	m := ext.Manifest
	home, ws := pol.Home, pol.Workspace
	var err error

	policy := sandbox.FromResolved(pol, ext.Dir, tmp, interp.Install, readOnly)
	policy.MemoryBytes = c.MemoryBytes
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxOut := c.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var proc *sandbox.Process
	// Past maxOut the tool is stopped: its context ends, which kills it
	// with everything it started.
	printed := printedCounter(ctx)
	stdout := &capWriter{max: maxOut, onFull: cancel, printed: printed}
	stderr := &capWriter{max: maxStderr, printed: printed}
	cmd := &sandbox.Command{
		Policy: policy,
		Path:   interp.Path,
		Args:   append([]string{script}, flags...),
		Env:    toolEnv(env, m.Settings, c.Settings, home, tmp),
		Dir:    ws,
		Stdout: stdout, Stderr: stderr,
	}
	launcher := r.Launcher
	if launcher == nil {
		launcher = &sandbox.Launcher{}
	}
	start := time.Now()
	proc, err = launcher.Start(ctx, cmd)
	if err != nil {
		// The timeout counts from before the sandbox is set up: one
		// that ends during the setup is the tool's timeout too.
		if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &ToolError{Tool: tool.Name, Msg: fmt.Sprintf("did not finish within %v and was killed with everything it started (the time ran out while its sandbox was being set up)", timeout)}
		}
		return nil, fmt.Errorf("tool %s: %w", tool.Name, err)
	}
	for _, w := range proc.Warnings {
		r.logger().Warn("tool runs with less confinement than its permissions ask for", "tool", tool.Name, "warning", w)
	}
	waitErr := proc.Wait()
	res := &Result{
		Tool: tool.Name, Duration: time.Since(start), Stdout: stdout.Bytes(), Stderr: stderr.String(),
		Denied: proc.Denied(), DeniedDropped: proc.DeniedDropped(), Warnings: proc.Warnings, Enforcement: proc.Enforcement,
	}
	var ee *exec.ExitError
	switch {
	case stdout.isFull():
		// Asked of the writer, not of the context: the tool may exit
		// before onFull, which runs on its own goroutine, has ended it.
		res.ExitCode = -1
		return res, &ToolError{Tool: tool.Name, Msg: fmt.Sprintf("printed more than %d bytes and was stopped", maxOut)}
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.ExitCode = -1
		return res, &ToolError{Tool: tool.Name, Msg: fmt.Sprintf("did not finish within %v and was killed with everything it started", timeout)}
	case ctx.Err() != nil:
		res.ExitCode = -1
		return res, fmt.Errorf("tool %s was stopped: %w", tool.Name, ctx.Err())
	case proc.OOMKilled:
		res.ExitCode = -1
		if errors.As(waitErr, &ee) {
			res.ExitCode = ee.ExitCode()
		}
		return res, failed(tool.Name, fmt.Sprintf("went past its memory bound (%d bytes for the tool and everything it started) and was killed", proc.Enforcement.MemoryBytes), res.Stderr, "")
	case errors.As(waitErr, &ee):
		res.ExitCode = ee.ExitCode()
		return res, failed(tool.Name, fmt.Sprintf("failed with exit status %d", res.ExitCode), res.Stderr, refusalHint(ext, res.Stderr, len(res.Denied) > 0))
	case waitErr != nil:
		return res, fmt.Errorf("tool %s: %w", tool.Name, waitErr)
	}
	if tool.Output == extension.OutputJSON {
		trimmed := bytes.TrimSpace(res.Stdout)
		if !json.Valid(trimmed) {
			return res, &ToolError{Tool: tool.Name, Msg: fmt.Sprintf("declares JSON output but printed something else; it begins: %q", firstBytes(res.Stdout, 200))}
		}
		res.Output = json.RawMessage(trimmed)
	} else {
		res.Text = string(res.Stdout)
	}
	return res, nil
}

// scriptPath resolves the tool's executable inside the extension folder,
// through the folder's Root: a path that climbs with "..", leaves the
// folder through a symlink, or is not a regular file (a FIFO, a device,
// a folder) is refused before anything runs. It returns the script's real
// path, the name the interpreter opens.
func scriptPath(ext *extension.Extension, t *extension.Tool) (string, error) {
	exe := filepath.ToSlash(t.Executable)
	if exe == "" {
		return "", fmt.Errorf("tool %s has no executable", t.Name)
	}
	for _, part := range strings.Split(exe, "/") {
		if part == ".." {
			return "", fmt.Errorf("tool %s: executable %q contains \"..\"; it must name a file inside the extension folder", t.Name, t.Executable)
		}
	}
	root, err := ext.Root()
	if err != nil {
		return "", fmt.Errorf("extension folder: %w", err)
	}
	defer root.Close()
	rel, err := ext.RelName(t.Executable)
	if err != nil {
		return "", fmt.Errorf("tool %s: executable %q is outside the extension folder %s", t.Name, t.Executable, ext.Dir)
	}
	real, err := root.Resolve(rel)
	if errors.Is(err, fsutil.ErrOutside) {
		return "", fmt.Errorf("tool %s: executable %q leads outside the extension folder (%v); gemkit runs only a file inside it", t.Name, t.Executable, err)
	}
	if err != nil {
		return "", fmt.Errorf("tool %s: executable: %w", t.Name, err)
	}
	f, err := root.Open(real)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return "", fmt.Errorf("tool %s: executable %q is not a regular file", t.Name, t.Executable)
	}
	if err != nil {
		return "", fmt.Errorf("tool %s: executable: %w", t.Name, err)
	}
	f.Close()
	return root.Path(real), nil
}

// boundOutside are the folders a link out of an extension's folder must
// not lead into for consent to bind what it names: those some tool may
// write (the run's workspace, the home folder when an installed
// extension may write it) and the temporary folders every program may.
func boundOutside(pol permission.Resolved) []string {
	out := append([]string(nil), pol.Untrusted...)
	for _, d := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		out = append(out, d)
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			out = append(out, r)
		}
	}
	return out
}

// checkConsent finds, records or asks for the person's consent to the
// extension's permissions, tied to their hash, and, where the store keeps
// it, to the extension's files. Files consent cannot bind (another name
// on disk, a link into writable, Content.Bindable) refuse the run before
// anyone is asked.
func (r *Runner) checkConsent(ctx context.Context, ext *extension.Extension, grant bool, writable []string) error {
	m := ext.Manifest
	hash := extension.PermissionsHash(m)
	q := ConsentRequest{Extension: m.Name, Lines: extension.PermissionsSummary(m)}
	cs, content := r.Consent.(ContentConsentStore)
	var now extension.Content
	if content {
		var err error
		if now, err = extension.ReadContent(ext.Dir); err != nil {
			return err
		}
		if err := now.Bindable(ext.Dir, writable); err != nil {
			return err
		}
		if agreed, granted := cs.ConsentContent(m.Name, hash); granted {
			if agreed.Digest == now.Digest {
				return nil
			}
			q.Notice = extension.ContentNotice(agreed, now, ext.Dir)
		}
	} else if r.Consent != nil && r.Consent.ConsentGranted(m.Name, hash) {
		return nil
	}
	ok := grant
	if !ok {
		if r.Ask == nil {
			return &ConsentError{Extension: q.Extension, Notice: q.Notice, Lines: q.Lines}
		}
		var err error
		ok, err = r.Ask(ctx, q)
		if err != nil {
			return err
		}
		if !ok {
			return &ConsentError{Extension: q.Extension, Notice: q.Notice, Lines: q.Lines, Declined: true}
		}
	}
	var err error
	switch {
	case content:
		err = cs.RecordConsentContent(m.Name, hash, now)
	case r.Consent != nil:
		err = r.Consent.RecordConsent(m.Name, hash)
	}
	if err != nil {
		return fmt.Errorf("recording consent: %w", err)
	}
	return nil
}

func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return ": " + s
}

func firstBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// capWriter keeps at most max bytes and calls onFull once when more come;
// printed, when not nil, counts every byte written, kept or not.
type capWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int64
	full    bool
	onFull  func()
	printed *atomic.Int64
}

type printedKey struct{}

// WithPrinted returns a context under which Run counts in n the bytes a
// tool prints (stdout and stderr) as it prints them, so that a caller can
// report the progress of a long call while it runs.
func WithPrinted(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, printedKey{}, n)
}

func printedCounter(ctx context.Context) *atomic.Int64 {
	n, _ := ctx.Value(printedKey{}).(*atomic.Int64)
	return n
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.printed != nil {
		w.printed.Add(int64(len(p)))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - int64(w.buf.Len())
	if int64(len(p)) > room {
		if room > 0 {
			w.buf.Write(p[:room])
		}
		if !w.full {
			w.full = true
			if w.onFull != nil {
				go w.onFull()
			}
		}
		return len(p), nil // keep draining so the tool is not blocked before the kill
	}
	w.buf.Write(p)
	return len(p), nil
}

// isFull reports whether more than max bytes were written.
func (w *capWriter) isFull() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.full
}

func (w *capWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

func (w *capWriter) String() string { return string(w.Bytes()) }
