// Package toolrun runs an extension's executable tool: it finds the tool,
// checks the call's arguments against the declared ones and turns them
// into flags, asks for (or finds) the person's consent to the extension's
// permissions, picks the interpreter, builds a minimal environment, and
// runs the script under the sandbox with bounded time, output and memory,
// returning its output parsed as the tool declares.
//
// A call goes one way: what it needs of the extension is taken once
// (prepare: the tool, its flags, its script, the terms of its
// permissions), the policy is resolved once on this machine
// (permission.Resolve), consent is checked against those terms, and the
// resolved policy is handed to the sandbox; nothing goes back to the
// manifest.
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
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// Limits a call gets unless it says otherwise.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxOutput = 4 << 20 // bytes of stdout; stderr keeps at most 1 MiB
	maxStderr        = 1 << 20
)

// Runner runs tools. One Runner serves many calls; it caches resolved
// interpreters. What it depends on is in its fields, given where it is
// built.
type Runner struct {
	// Launcher starts the sandboxed process; nil is a default Launcher
	// (refuses what cannot be enforced).
	Launcher *sandbox.Launcher
	// Consent keeps the person's consent; nil means consent must come
	// from Call.GrantConsent or Ask on every run, and none is recorded.
	Consent ConsentStore
	// Installed lists the installed extensions: their folders stay
	// read-only to every tool, and a home folder one of them may write
	// is searched for no program. nil: only ReadOnly stays read-only.
	Installed Installed
	// Ask asks the person; nil means nobody can be asked (no terminal),
	// and a run without recorded consent fails closed.
	Ask Asker
	// AgreeCommand returns the command a person runs to agree to an
	// extension's permissions outside any call, which refusals name
	// (ConsentError.Agree, the hint of a tool the sandbox refused); nil
	// names none.
	AgreeCommand func(extension string) string
	// Environ is the user's environment, the source of PATH, HOME, the
	// locale and the extension's settings; nil means os.Environ().
	Environ []string
	// Protected are folders closed to every tool whatever its scope, in
	// addition to ~/.gemini (and $GEMINI_CLI_HOME/.gemini), which always
	// are: the extension store's own folder when it lives elsewhere.
	Protected []string
	// ReadOnly are folders no tool may write whatever its scope, in
	// addition to those Installed lists.
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
	Text     string            `json:"text,omitempty"`
	Stdout   []byte            `json:"-"`
	Stderr   string            `json:"stderr,omitempty"`
	Duration time.Duration     `json:"durationNs"`
	Denied   []netproxy.Denial `json:"denied,omitempty"`
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

func (r *Runner) environ() []string {
	if r.Environ != nil {
		return r.Environ
	}
	return os.Environ()
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Runner) launcher() *sandbox.Launcher {
	if r.Launcher != nil {
		return r.Launcher
	}
	return &sandbox.Launcher{}
}

// prepared is a Call made ready to run: what it needs of the extension
// and of this process, taken once.
type prepared struct {
	ext    *extension.Extension
	tool   *extension.Tool
	flags  []string
	script string
	// terms are the extension's permissions as the person agrees to
	// them, worked out once.
	terms    extension.Terms
	env      map[string]string
	home, ws string
	// readOnly are the folders every tool finds read-only.
	readOnly []string
}

// Run runs one tool call. A non-nil Result comes back whenever the tool
// ran, also together with a *ToolError.
func (r *Runner) Run(ctx context.Context, c Call) (*Result, error) {
	p, err := r.prepare(c)
	if err != nil {
		return nil, err
	}
	pol := r.resolve(p.terms.Policy, p.env, p.ws, p.home, p.ext.Dir, p.readOnly)
	if err := r.checkConsent(ctx, p.ext, p.terms, c.GrantConsent, boundOutside(pol)); err != nil {
		return nil, err
	}
	ask := func(ctx context.Context, shim string, args []string) (string, error) {
		return r.askShim(ctx, shim, args, p.env, pol, p.readOnly)
	}
	interp, err := r.runtimes.resolve(ctx, p.tool.Runtime, p.env["PATH"], p.home, pol.Untrusted, ask)
	if err != nil {
		return nil, err
	}
	// The tool's own PATH leaves out the same folders: a program it
	// starts by name must not be one a tool planted.
	p.env = withPath(p.env, pol.SearchPath(p.env["PATH"]))

	tmp, err := os.MkdirTemp("", "gemkit-tool-")
	if err != nil {
		return nil, fmt.Errorf("private temp dir: %w", err)
	}
	res, err := r.run(ctx, c, p, pol, interp, tmp)
	// The temp dir goes whatever modes the tool left in it; a temp dir
	// that stays is an error, not a silent leak.
	if rerr := removeTemp(tmp); rerr != nil {
		err = errors.Join(err, fmt.Errorf("tool %s: removing its private temp dir: %w", p.tool.Name, rerr))
	}
	return res, err
}

// prepare finds the tool, turns the arguments into flags, resolves its
// script, works out the extension's terms and takes the environment,
// home and workspace of the run.
func (r *Runner) prepare(c Call) (*prepared, error) {
	ext := c.Extension
	if ext == nil || ext.Manifest == nil {
		return nil, errors.New("toolrun: no extension")
	}
	tool, err := findTool(ext.Manifest, c.Tool)
	if err != nil {
		return nil, err
	}
	p := &prepared{ext: ext, tool: tool, terms: ext.Manifest.Terms(), env: envmap.Of(r.environ())}
	if p.flags, err = Flags(tool, c.Args); err != nil {
		return nil, err
	}
	if p.script, err = scriptPath(ext, tool); err != nil {
		return nil, err
	}
	if p.home = p.env["HOME"]; p.home == "" {
		if p.home, err = os.UserHomeDir(); err != nil {
			return nil, fmt.Errorf("no HOME: %w", err)
		}
	}
	if p.ws = c.Workspace; p.ws == "" {
		if p.ws, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if p.ws, err = filepath.Abs(p.ws); err != nil {
		return nil, err
	}
	if p.readOnly, err = r.readOnly(); err != nil {
		return nil, err
	}
	return p, nil
}

// findTool returns the tool called name, or an error naming the tools
// there are.
func findTool(m *extension.Manifest, name string) (*extension.Tool, error) {
	if t := m.Tool(name); t != nil {
		return t, nil
	}
	if len(m.Tools) == 0 {
		return nil, fmt.Errorf("extension %s has no tools", m.Name)
	}
	names := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("extension %s has no tool %q (its tools: %s)", m.Name, name, strings.Join(names, ", "))
}

// run starts the tool in its sandbox under the resolved policy, waits for
// it and reads its outcome.
func (r *Runner) run(ctx context.Context, c Call, p *prepared, pol permission.Resolved, interp Interpreter, tmp string) (*Result, error) {
	policy := sandbox.FromResolved(pol, p.ext.Dir, tmp, interp.Install, p.readOnly)
	policy.MemoryBytes = c.MemoryBytes
	timeout, maxOut := c.Timeout, c.MaxOutput
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Past maxOut the tool is stopped: its context ends, which kills it
	// with everything it started.
	printed := printedCounter(ctx)
	stdout := &capWriter{max: maxOut, onFull: cancel, printed: printed}
	stderr := &capWriter{max: maxStderr, printed: printed}
	cmd := &sandbox.Command{
		Policy: policy,
		Path:   interp.Path,
		Args:   append([]string{p.script}, p.flags...),
		Env:    toolEnv(p.env, p.ext.Manifest.Settings, c.Settings, pol.Home, tmp),
		Dir:    pol.Workspace,
		Stdout: stdout, Stderr: stderr,
	}
	start := time.Now()
	proc, err := r.launcher().Start(ctx, cmd)
	if err != nil {
		// The timeout counts from before the sandbox is set up: one
		// that ends during the setup is the tool's timeout too.
		if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &ToolError{Tool: p.tool.Name, Msg: fmt.Sprintf("did not finish within %v and was killed with everything it started (the time ran out while its sandbox was being set up)", timeout)}
		}
		return nil, fmt.Errorf("tool %s: %w", p.tool.Name, err)
	}
	for _, w := range proc.Warnings {
		r.logger().Warn("tool runs with less confinement than its permissions ask for", "tool", p.tool.Name, "warning", w)
	}
	waitErr := proc.Wait()
	res := &Result{
		Tool: p.tool.Name, Duration: time.Since(start), Stdout: stdout.Bytes(), Stderr: stderr.String(),
		Denied: proc.Denied(), DeniedDropped: proc.DeniedDropped(), Warnings: proc.Warnings, Enforcement: proc.Enforcement,
	}
	if err := r.ended(ctx, p, pol, proc, res, waitErr, stdout.isFull(), timeout, maxOut); err != nil {
		return res, err
	}
	return res, output(p.tool, res)
}

// ended says how a run that did not succeed ended: stopped for printing
// too much (full), for its time or its memory, cancelled, or failed; nil
// when the tool exited 0.
func (r *Runner) ended(ctx context.Context, p *prepared, pol permission.Resolved, proc *sandbox.Process, res *Result, waitErr error, full bool,
	timeout time.Duration, maxOut int64) error {
	name := p.tool.Name
	var ee *exec.ExitError
	switch {
	case full:
		// Asked of the writer, not of the context: the tool may exit
		// before onFull, which runs on its own goroutine, has ended it.
		res.ExitCode = -1
		return &ToolError{Tool: name, Msg: fmt.Sprintf("printed more than %d bytes and was stopped", maxOut)}
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.ExitCode = -1
		return &ToolError{Tool: name, Msg: fmt.Sprintf("did not finish within %v and was killed with everything it started", timeout) + stackBoundHint(proc.Enforcement)}
	case ctx.Err() != nil:
		res.ExitCode = -1
		return fmt.Errorf("tool %s was stopped: %w", name, ctx.Err())
	case proc.OOMKilled:
		res.ExitCode = -1
		if errors.As(waitErr, &ee) {
			res.ExitCode = ee.ExitCode()
		}
		return failed(name, fmt.Sprintf("went past its memory bound (%d bytes for the tool and everything it started) and was killed", proc.Enforcement.MemoryBytes), res.Stderr, "")
	case errors.As(waitErr, &ee):
		res.ExitCode = ee.ExitCode()
		hint := refusalHint(pol, res.Stderr, len(res.Denied) > 0, r.agreeCommand(p.ext.Manifest.Name))
		how := fmt.Sprintf("failed with exit status %d", res.ExitCode)
		if res.ExitCode == -1 {
			// A signal ended it (a crash, an abort, a kill): its name
			// says what the -1 of an exit code cannot.
			how = "was ended by a signal (" + ee.ProcessState.String() + ")"
		}
		return failed(name, how, res.Stderr, hint)
	case waitErr != nil:
		return fmt.Errorf("tool %s: %w", name, waitErr)
	}
	return nil
}

// stacksBound is a per-process memory bound under which a runtime's
// usual threads may not start: RLIMIT_DATA counts each thread's stack
// whole, touched or not (8 MiB under the usual ulimit -s), and Node
// starts six threads beside its main one.
const stacksBound = 64 << 20

// stackBoundHint is what a run that ran out of time adds when its bound
// was each process's RLIMIT_DATA and small enough to refuse a runtime
// its threads: Node then waits for worker threads it could not start,
// so the time runs out and nothing else says why.
func stackBoundHint(enf sandbox.Enforcement) string {
	if !enf.DataRlimit || enf.MemoryBytes == 0 || enf.MemoryBytes >= stacksBound {
		return ""
	}
	why := "no memory cgroup here"
	if enf.Memory != "rlimit" {
		why = "beside a cgroup that cannot bound swap"
	}
	return fmt.Sprintf("; its memory bound, %d bytes for each process (%s), counts each thread's stack whole (8 MiB under the usual ulimit -s), which keeps a runtime such as Node from starting the threads it then waits for (Node's tools run with --memory %d)", enf.MemoryBytes, why, stacksBound)
}

// output reads a successful run's stdout as the tool declares it.
func output(t *extension.Tool, res *Result) error {
	if t.Output != extension.OutputJSON {
		res.Text = string(res.Stdout)
		return nil
	}
	trimmed := bytes.TrimSpace(res.Stdout)
	if !json.Valid(trimmed) {
		return &ToolError{Tool: t.Name, Msg: fmt.Sprintf("declares JSON output but printed something else; it begins: %q", firstBytes(res.Stdout, 200))}
	}
	res.Output = json.RawMessage(trimmed)
	return nil
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
