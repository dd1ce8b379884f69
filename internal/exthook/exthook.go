// Package exthook runs an extension's command hook in gemkit's sandbox,
// in Gemini CLI's place: once an extension is switched to gemkit
// (`gemkit extensions sandbox NAME`), Gemini CLI no longer runs its
// hooks (hooksConfig.disabled) and runs instead a user-level hook of
// gemkit's, `gemkit extensions hook EXT LABEL`, which runs the original
// command here.
//
// The run is what Gemini CLI 0.61's HookRunner.executeCommandHook
// (packages/core/src/hooks/hookRunner.ts) would do with the hook, in a
// hook profile: the command, with the variables the extension's loader
// replaces (${extensionPath}, ${workspacePath}, ${/}, the extension's
// settings) and those HookRunner.expandCommand replaces
// ($GEMINI_PROJECT_DIR, $GEMINI_CWD, $GEMINI_PLANS_DIR,
// $GEMINI_SESSION_ID, $CLAUDE_PROJECT_DIR, shell-quoted), goes to
// `bash -c` in the session's folder; Gemini CLI's input reaches its
// stdin and its stdout, stderr and exit code go back to Gemini CLI
// unchanged, which reads them as it would the hook's own. The profile
// reads the workspace, the extension's folder and the system's
// programs; writes nothing but a private temporary folder that goes
// with the run; reaches no network (what it tries is refused and
// reported); and its environment is, of what Gemini CLI gives hooks,
// only what names no secret (PATH, the user's name, the locale, the
// terminal, the hook variables), with the hook's env and the
// extension's settings. The person can widen one hook by name (hosts,
// writing the workspace), as for servers.
//
// A switched Claude Code plugin's hooks run the same way on its twin
// extension, started by Claude Code (Hook.Agent AgentClaude): with
// Claude Code's variables (claude.go), and an answer read as Claude
// Code reads it (hookout.FilterClaude).
package exthook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/hookout"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/progsearch"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/shell"
)

// DefaultTimeout is Gemini CLI's timeout of a hook that sets none
// (DEFAULT_HOOK_TIMEOUT in hookRunner.ts).
const DefaultTimeout = 60 * time.Second

// Hook is one run of a hook.
type Hook struct {
	// Extension is the extension's name, Dir its folder.
	Extension, Dir string
	// Hook is the hook as its hooks.json has it.
	Hook extension.CommandHook
	// Settings are the values of the extension's declared settings, by
	// variable (the hook's env gets them, as Gemini CLI gives them).
	Settings map[string]string
	// Widening is what the person allowed this hook beyond the profile.
	Widening extension.Widening
	// Workspace is the session's folder (the hook's working folder),
	// Environ the environment Gemini CLI gave gemkit's hook.
	Workspace string
	Environ   []string
	// ReadOnly are folders the hook may not write whatever it is
	// allowed: every extension's code.
	ReadOnly []string
	// Agent is the agent that runs gemkit's hook: "" for Gemini CLI,
	// AgentClaude for Claude Code, which runs the hooks of a switched
	// Claude Code plugin's twin extension. It chooses the variables the
	// hook gets and how gemkit's answer is read.
	Agent string
	// Gate, when set, is the check the hook's command waits for (the
	// person's consent to the extension as it is now): it runs while the
	// sandbox is set up, and its error is Run's, the command not run
	// (sandbox.Command.Gate).
	Gate func(context.Context) error
}

// AgentClaude is Hook.Agent for Claude Code 2.1.330.
const AgentClaude = "claude"

// safeEnv are the variables of the environment Gemini CLI gives hooks
// that a hook run by gemkit keeps: they name no secret. The others
// (tokens, API keys, Gemini CLI's own, SSH and GPG agents) stay behind:
// what a hook prints reaches the model.
var safeEnv = map[string]bool{
	"PATH": true, "USER": true, "LOGNAME": true, "LANG": true, "LANGUAGE": true, "TZ": true,
	"TERM": true, "COLORTERM": true, "NO_COLOR": true, "FORCE_COLOR": true,
	"LC_ALL": true, "LC_CTYPE": true, "LC_COLLATE": true, "LC_MESSAGES": true,
	"LC_MONETARY": true, "LC_NUMERIC": true, "LC_TIME": true,
	// What Gemini CLI sets for a hook (HookRunner.executeCommandHook) or
	// for every program it starts.
	"GEMINI_PROJECT_DIR": true, "GEMINI_PLANS_DIR": true, "GEMINI_CWD": true, "GEMINI_SESSION_ID": true,
	"CLAUDE_PROJECT_DIR": true, "GEMINI_CLI": true,
}

// hookVars are the variables HookRunner.expandCommand replaces in a
// hook's command with their values, shell-quoted, in its order.
var hookVars = []string{"GEMINI_PROJECT_DIR", "GEMINI_CWD", "GEMINI_PLANS_DIR", "GEMINI_SESSION_ID", "CLAUDE_PROJECT_DIR"}

// hookVarRefs are hookVars' patterns, as expandCommand writes them
// (/\$GEMINI_PROJECT_DIR/g: no word boundary).
var hookVarRefs = sync.OnceValue(func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, v := range hookVars {
		out = append(out, regexp.MustCompile(`\$`+v))
	}
	return out
})

// Command is the command line the hook runs through bash -c: its
// command with the variables replaced as Gemini CLI replaces them.
func (h *Hook) Command() string {
	env := envmap.Of(h.Environ)
	vars := extension.Variables{ExtensionPath: h.Dir, WorkspacePath: h.Workspace}
	cmd := h.Hook.Hydrated(h.Hook.Command, vars, h.Settings)
	if h.Agent == AgentClaude {
		// Claude Code replaces none of Gemini CLI's variables in a
		// command: its shell reads its own from the environment (Env).
		return cmd
	}
	refs := hookVarRefs()
	for i, v := range hookVars {
		val := env[v]
		if val == "" && v != "GEMINI_PLANS_DIR" && v != "GEMINI_SESSION_ID" {
			val = h.Workspace
		}
		cmd = refs[i].ReplaceAllLiteralString(cmd, quote(val))
	}
	return cmd
}

// Env is the hook's whole environment, for a run whose private
// temporary folder is tmp (also its HOME).
func (h *Hook) Env(tmp string) []string {
	out := map[string]string{}
	for k, v := range envmap.Of(h.Environ) {
		if safeEnv[k] {
			out[k] = v
		}
	}
	var path []string
	for _, d := range filepath.SplitList(out["PATH"]) {
		if filepath.IsAbs(d) {
			path = append(path, d)
		}
	}
	out["PATH"] = strings.Join(path, string(filepath.ListSeparator))
	for _, k := range []string{"GEMINI_PROJECT_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR"} {
		if out[k] == "" {
			out[k] = h.Workspace
		}
	}
	out["HOME"] = tmp
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		out[k] = tmp
	}
	if h.Agent == AgentClaude {
		h.claudeEnv(out, tmp)
	}
	vars := extension.Variables{ExtensionPath: h.Dir, WorkspacePath: h.Workspace}
	for k, v := range h.Hook.Env {
		out[k] = h.Hook.Hydrated(v, vars, h.Settings)
	}
	for k, v := range h.Settings {
		out[k] = v
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, len(keys))
	for i, k := range keys {
		env[i] = k + "=" + out[k]
	}
	return env
}

// Policy is the hook's sandbox policy, for the run's private temporary
// folder tmp: the hook profile, widened by h.Widening.
func (h *Hook) Policy(tmp string) (sandbox.Policy, error) {
	env := envmap.Of(h.Environ)
	home := env["HOME"]
	if !filepath.IsAbs(home) {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return sandbox.Policy{}, fmt.Errorf("no home folder: %w", err)
		}
	}
	distrusted := permission.Untrusted(h.Workspace, home, nil)
	// gemkit's runtime folders (the code-intelligence brokers' and the
	// hooks' warm sandboxes' sockets) are among the closed ones, as for
	// every sandboxed process (permission.ClosedPaths).
	closed := permission.ClosedOf(env.Get)
	closed.Home = home
	pol := sandbox.Policy{
		Read: permission.AccessWorkspace, Write: permission.AccessNone,
		Workspace: h.Workspace, Home: home, ExtensionDir: h.Dir, TempDir: tmp,
		Protected: permission.ClosedPaths(closed), ReadOnly: h.ReadOnly,
		AllowedHosts: h.Widening.Hosts, OwnServer: func(port int) bool { return permission.OwnServerPort(closed, port) },
		// Every host it tries, allowed or not, is known: refused ones
		// are reported.
		ReportRefusals: true,
		UnixSockets:    h.Widening.UnixSockets,
		OwnProcesses:   true,
	}
	if h.Widening.Write == permission.AccessWorkspace {
		pol.Write = permission.AccessWorkspace
		pol.Guarded = permission.ProtectedPaths(permission.GuardInputs{Write: pol.Write, Workspace: h.Workspace, Home: home,
			ExtensionFolders: append([]string{h.Dir}, h.ReadOnly...), Getenv: func(k string) string { return env[k] }})
	}
	// The shell, and the program the command starts first, found where
	// a server's would be (never in the workspace), read as runtimes
	// wherever they are installed.
	look := progsearch.Look(env["PATH"], distrusted)
	var runtime []string
	add := func(p string) {
		real := fsutil.RealPath(p)
		if fsutil.Within(fsutil.RealPath(h.Dir), real) {
			return
		}
		runtime = append(runtime, progsearch.Prefix(real))
		if in := progsearch.InterpreterAt(real, look); in != "" {
			runtime = append(runtime, progsearch.Prefix(in))
		}
	}
	if p, err := look("bash"); err == nil {
		add(p)
	}
	if first := firstWord(h.Command()); first != "" {
		if filepath.IsAbs(first) {
			add(first)
		} else if !strings.ContainsRune(first, '/') {
			if p, err := look(first); err == nil {
				add(p)
			}
		}
	}
	pol.RuntimePaths = slices.DeleteFunc(runtime, func(r string) bool {
		if r == "" || r == "/" || fsutil.Within(fsutil.RealPath(home), r) {
			return true
		}
		for _, c := range pol.Protected {
			if fsutil.Within(c, r) || fsutil.Within(r, c) {
				return true
			}
		}
		return false
	})
	slices.Sort(pol.RuntimePaths)
	pol.RuntimePaths = slices.Compact(pol.RuntimePaths)
	return pol, nil
}

// firstWord is the first word of a shell command, when plain.
func firstWord(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 || strings.ContainsAny(f[0], `'"$\`+"`") {
		return ""
	}
	return f[0]
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the hook's exit code, as Gemini CLI is to see it.
	ExitCode int
	// TimedOut: the run was stopped at its timeout.
	TimedOut bool
	// Denied are the sandbox's refusals: of its connections, and of its
	// writes (Method sandbox.WriteMethod, by Path, with no host).
	Denied []netproxy.Denial
	// Stderr is the end of what it wrote on stderr, for finding refused
	// writes.
	Stderr string
	// Dropped is what gemkit left out of the hook's answer, or cut
	// (hookout.Filter).
	Dropped []hookout.Drop
}

// Run runs the hook in the sandbox with l, in the session's folder,
// with stdin, then writes gemkit's answer for it on stdout and stderr
// (answer). It stops it at its timeout (Gemini CLI's, which stops
// gemkit's hook then too) and when ctx ends. An error is one that kept
// the hook from running.
func (h *Hook) Run(ctx context.Context, l *sandbox.Launcher, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	tail := &tailBuffer{max: 64 << 10}
	var out, errb hookout.Buffer
	res, err := h.run(ctx, l, stdin, &out, io.MultiWriter(&errb, tail), runHooks{gate: h.Gate})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The timeout counts from before the sandbox is set up, as a
		// tool's does: one that ends during the set-up (a short
		// timeout on a loaded machine) is the hook's timeout too, as
		// the hook killed at it is (run).
		res, err = Result{TimedOut: true, ExitCode: 1}, nil
	}
	res.Stderr = tail.String()
	if err != nil {
		return res, err
	}
	return h.answer(res, &out, &errb, stdout, stderr), nil
}

// answer writes on stdout and stderr, for Gemini CLI, gemkit's answer
// for a run that ended as res says, out and errb being what the hook
// wrote: its own answer as hookout.Filter leaves it, or, for a run
// stopped at its timeout, none but words on stderr (Gemini CLI reads
// no answer of a hook it stopped). It is res with the exit code
// Gemini CLI is to see and what gemkit dropped.
func (h *Hook) answer(res Result, out, errb *hookout.Buffer, stdout, stderr io.Writer) Result {
	if res.TimedOut {
		res.ExitCode = max(res.ExitCode, 1)
		_, _ = io.WriteString(stderr, "gemkit: "+h.TimedOutWords()+"\n")
		return res
	}
	var a hookout.Answer
	if h.Agent == AgentClaude {
		a = hookout.FilterClaude(hookout.ClaudeEvent(h.Hook.Event), out, errb, res.ExitCode)
	} else {
		a = hookout.Filter(h.Hook.Event, out, errb, res.ExitCode)
	}
	_, _ = stdout.Write(a.Stdout)
	_, _ = stderr.Write(a.Stderr)
	res.ExitCode, res.Dropped = a.Code, a.Dropped
	return res
}

// TimedOutWords say that the hook was stopped at its timeout, and where
// that is set.
func (h *Hook) TimedOutWords() string {
	return fmt.Sprintf("the hook %s of %s was stopped at its timeout, %s, before it finished: raise its \"timeout\" (milliseconds) in hooks/hooks.json if it needs longer", h.Hook.Label, h.Extension, h.Timeout())
}

// Timeout is how long the hook may run before it is stopped: its
// "timeout" in milliseconds, or Gemini CLI's default.
func (h *Hook) Timeout() time.Duration { return h.timeout() }

func (h *Hook) timeout() time.Duration {
	if h.Hook.Timeout > 0 {
		return time.Duration(h.Hook.Timeout) * time.Millisecond
	}
	return DefaultTimeout
}

// runHooks are what a run calls on its way: gate is the Command's Gate;
// started, when set, is called once Start has returned, with whether the
// command started; exited is the Command's OnExit.
type runHooks struct {
	gate    func(context.Context) error
	started func(bool)
	exited  func(*os.ProcessState)
}

// run starts the hook's command in its sandbox and waits for its end;
// ctx's end kills it.
func (h *Hook) run(ctx context.Context, l *sandbox.Launcher, stdin io.Reader, stdout, stderr io.Writer, rh runHooks) (Result, error) {
	tmp, err := os.MkdirTemp("", "gemkit-hook-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	pol, err := h.Policy(tmp)
	if err != nil {
		return Result{}, err
	}
	bash, err := progsearch.Look(envmap.Of(h.Environ)["PATH"], permission.Untrusted(h.Workspace, envmap.Of(h.Environ)["HOME"], nil))("bash")
	if err != nil {
		return Result{}, fmt.Errorf("no bash to run the hook with: %w", err)
	}
	var mu sync.Mutex
	var denied []netproxy.Denial
	cmd := &sandbox.Command{
		Policy: pol, Path: bash, Args: []string{"-c", h.Command()}, Env: h.Env(tmp), Dir: h.Workspace,
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Gate: rh.gate, OnExit: rh.exited,
		OnDeny: func(d netproxy.Denial) {
			mu.Lock()
			denied = append(denied, d)
			mu.Unlock()
		},
	}
	p, err := l.Start(ctx, cmd)
	if rh.started != nil {
		rh.started(err == nil)
	}
	if err != nil {
		return Result{}, err
	}
	stop := context.AfterFunc(ctx, p.Kill)
	werr := p.Wait()
	stop()
	mu.Lock()
	res := Result{Denied: denied, TimedOut: ctx.Err() == context.DeadlineExceeded}
	mu.Unlock()
	if d := p.Denied(); len(d) > 0 {
		res.Denied = d
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee) && ee.ExitCode() >= 0:
		res.ExitCode = ee.ExitCode()
	default:
		// Killed (its timeout, or ctx): Gemini CLI reads no exit code
		// of a hook it timed out, and a non-blocking error otherwise.
		res.ExitCode = 1
	}
	return res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// quote is s as one word of bash, as Gemini CLI's escapeShellArg gives
// it (shell-quote), "" for an empty one.
func quote(s string) string {
	if s == "" {
		return ""
	}
	return shell.Quote(s)
}
