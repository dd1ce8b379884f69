package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/spf13/cobra"
)

const extHookLong = `Run one command hook of an extension switched to gemkit (gemkit extensions
sandbox NAME) in gemkit's sandbox. Gemini CLI runs this: the switch turns the
extension's hooks off in Gemini CLI (hooksConfig.disabled in
~/.gemini/settings.json) and adds, for each, a hook of gemkit's on the same
event, matcher and timeout that runs this command. HOOK is the hook's label, as
describe shows it: its name, or its event and place (BeforeTool-1).

The hook's command runs as Gemini CLI would run it (bash -c, its variables
replaced, in the session's folder), in the hook profile: it reads the
workspace, its extension's folder and the system's programs; writes nothing
but a temporary folder that goes with the run; has no network; and keeps, of
the environment Gemini CLI gives hooks, only PATH, the user's name, the locale,
the terminal and the hook variables (GEMINI_PROJECT_DIR, GEMINI_SESSION_ID...),
with the hook's env and the extension's settings. What Gemini CLI writes to the
hook's stdin reaches it. Its answer (stdout, stderr, exit code) is read as Gemini
CLI reads it, and gemkit answers in its place with what cannot act beyond your
approval: its blocks, asks, stops and texts (each cut to 10,000 characters),
never a rewrite of the tool call, the model's request or answer, or the tools;
an answer gemkit cannot read as Gemini CLI would is a block (a warning where a
block would not narrow anything). What the sandbox refuses it, and what gemkit
left out of its answer, is kept for gemkit extensions doctor and describe, with
the command that allows what can be allowed
(gemkit extensions sandbox NAME --hook HOOK --allow-host H).

It runs nothing, and exits 1 (a warning for Gemini CLI) saying why, when the
extension is not switched, the hook is not among those the switch took, or
your consent to the extension as it is now does not hold.

After a run it leaves the next one's sandbox set up, in a process of its own
(gemkit extensions hook ... --warm-serve), which the next run of the same
hook, extension, workspace, settings, environment and Gemini CLI session
uses instead of setting one up; it checks your consent at every run, and ends
after 60 s without a run, with the session, or at a refusal.`

func newExtHookCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook <name> <hook>",
		Short: "Run a switched extension's command hook in gemkit's sandbox (Gemini CLI runs this)",
		Long:  extHookLong,
		Args:  argsUsage(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHook(cmd, a, args[0], args[1])
		},
	}
	// The warm server of the hook (see runHook): gemkit starts it, as
	// itself, after a run.
	cmd.Flags().String(warmServeFlag, "", "serve the next runs of the hook from a sandbox set up ahead (gemkit starts this)")
	_ = cmd.Flags().MarkHidden(warmServeFlag)
	return cmd
}

// hookRefusal is a hook that does not run, in words, as Gemini CLI
// shows a hook's non-blocking error (exit 1: "Warning: " and stderr).
func hookRefusal(format string, args ...any) error {
	return withExitCode(ExitNo, fmt.Errorf("gemkit did not run the hook: "+format, args...))
}

// runHook runs the hook label of the extension name. A warm sandbox
// left by an earlier run takes the run before this (package hookclient,
// as the program starts); this is the cold way, which leaves one for
// the next run.
func runHook(cmd *cobra.Command, a *app, name, label string) error {
	lh, err := loadHook(cmd, a, name, label)
	if err != nil {
		return err
	}
	h := lh.h
	// Gemini CLI stops a hook at its timeout with SIGTERM: the sandbox
	// goes with gemkit then.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := func(start time.Time, res exthook.Result) {
		keepHookRefusals(name, label, h.Workspace, h.Dir, h.Widening, start, res)
	}
	if key, _ := cmd.Flags().GetString(warmServeFlag); key != "" {
		return serveWarmHook(ctx, cmd, a, lh, name, label, key, done)
	}
	l := &sandbox.Launcher{}
	start := time.Now()
	res, err := h.Run(ctx, l, a.In, a.Out, a.Err)
	if err != nil {
		return hookRefusal("%v", err)
	}
	done(start, res)
	if warm := warmHook(a, h); warm != nil {
		warm.leave(h.Workspace)
	}
	// A run stopped at its timeout ends with words, not an exit status
	// alone (exthook's answer wrote them).
	if res.ExitCode != 0 {
		return withExitCode(res.ExitCode, nil)
	}
	return nil
}

// loadedHook is a hook as the extension store has it now, ready to run.
type loadedHook struct {
	st  *extension.Store
	in  *extension.Installed
	ext *extension.Extension
	h   *exthook.Hook
}

// loadHook reads the hook label of the extension name from the store,
// or says in a hook's refusal why it does not run. Its Gate checks the
// person's consent to the extension as it is when it runs. A warm
// server watches every file and folder it reads (storeWatch): a read
// added here must be named there.
func loadHook(cmd *cobra.Command, a *app, name, label string) (*loadedHook, error) {
	st, in, err := openInstalled(cmd, name)
	if err != nil {
		return nil, hookRefusal("%v", err)
	}
	if in.Extension == nil {
		return nil, hookRefusal("the extension %s cannot be read: %v", extension.Printable(name), in.Err)
	}
	ext := in.Extension
	c, err := st.ServerChoice(ext.Manifest.Name)
	if err != nil {
		return nil, hookRefusal("%v", err)
	}
	var switched *extension.SwitchedHook
	for i, h := range c.Hooks {
		if h.Label == label && h.Command != "" {
			switched = &c.Hooks[i]
		}
	}
	if !c.Switched || switched == nil {
		return nil, hookRefusal("%s's hook %s is not switched to gemkit; gemkit extensions sandbox %s switches it", extension.Printable(name), extension.Printable(label), extension.Printable(name))
	}
	hooks, err := ext.CommandHooks()
	if err != nil {
		return nil, hookRefusal("%s's hooks: %v", extension.Printable(name), err)
	}
	var hook *extension.CommandHook
	for i, h := range hooks {
		if h.Label == label {
			hook = &hooks[i]
		}
	}
	if hook == nil {
		return nil, hookRefusal("%s has no hook %s any more; gemkit extensions sandbox %s takes its hooks as they are now", extension.Printable(name), extension.Printable(label), extension.Printable(name))
	}
	ws, err := os.Getwd()
	if err != nil {
		return nil, hookRefusal("%v", err)
	}
	w := c.HookWidening[label]
	h := &exthook.Hook{Extension: ext.Manifest.Name, Dir: ext.Dir, Hook: *hook, Settings: declaredSettings(in), Widening: w,
		Workspace: ws, Environ: os.Environ()}
	if w.Write != "" {
		for _, other := range installedFolders(st) {
			h.ReadOnly = append(h.ReadOnly, other)
		}
	}
	lh := &loadedHook{st: st, in: in, ext: ext, h: h}
	h.Gate = func(context.Context) error { return lh.consent(a, nil) }
	return lh, nil
}

// consent is the check a hook's command waits for: the person agreed
// to the extension as it is now, its hooks included (the extension's
// files as they were then). It runs while the sandbox is set up
// (sandbox.Command.Gate): the command is executed only once it has
// passed, and never when it fails, whose words are the refusal's.
// checked, when set, is the extension's files as read already by a
// caller that knows they have not changed since (a warm server's watch
// of the folder); nil reads them.
func (lh *loadedHook) consent(a *app, checked *checkedFiles) error {
	st, ext, name := lh.st, lh.ext, lh.ext.Manifest.Name
	var state extension.ConsentState
	var err error
	if checked != nil {
		state, err = st.ConsentTo(ext, checked.content, checked.err)
	} else {
		state, err = st.Consent(ext)
	}
	if err != nil {
		return fmt.Errorf("consent to %s cannot be checked: %v", extension.Printable(name), err)
	}
	if !state.Granted {
		return fmt.Errorf("you have not agreed to the extension %s as it is now (its hooks included); run %s", extension.Printable(name), consentHint(name))
	}
	// The folders a sandboxed process may write are found (listing
	// every installed extension) only for an extension with links out
	// of its folder, which they concern: a hook runs at every tool call.
	var writable []string
	if len(state.Content.LinksOut) > 0 {
		writable = servePolicy(a, st).Writable()
	}
	return state.Content.Bindable(ext.Dir, writable)
}

// checkedFiles is an extension's files as Store.CheckFiles read them.
type checkedFiles struct {
	content extension.Content
	err     error
}

// declaredSettings are the values of in's declared settings, by
// variable, from its settings files: the values Gemini CLI adds to a
// hook's env.
func declaredSettings(in *extension.Installed) map[string]string {
	all := hookSettings(in)
	out := map[string]string{}
	for _, s := range in.Extension.Manifest.Settings {
		if v, ok := all[s.EnvVar]; ok {
			out[s.EnvVar] = v
		}
	}
	return out
}

// installedFolders are every installed extension's folder and linked
// source.
func installedFolders(st *extension.Store) []string {
	all, err := st.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, in := range all {
		out = append(out, in.Entry)
		if in.Extension != nil {
			out = append(out, in.Extension.Dir)
		}
	}
	return out
}

// keepHookRefusals keeps what the sandbox refused the hook (its
// connections, the writes the watch of its writes saw refused, and the
// writes its stderr says were refused) and what gemkit left out of its
// answer in the refusals file that doctor and describe read.
func keepHookRefusals(ext, label, ws, dir string, w extension.Widening, start time.Time, res exthook.Result) {
	allow := "gemkit extensions sandbox " + extension.Printable(ext) + " --hook " + label
	var rs []extmcp.Refusal
	var seen []string
	for _, d := range res.Denied {
		r := extmcp.Refusal{At: d.At, Start: start, Extension: ext, Hook: label, Host: d.Host, Reason: d.Reason, Count: d.Count}
		switch {
		case d.Method == sandbox.WriteMethod:
			// A write, by the path its call named: no host.
			if d.Path == "" {
				continue
			}
			r.Host, r.Path = "", d.Path
			r.Reason, r.Allow = hookWriteReason(d.Reason, allow)
			seen = append(seen, d.Path)
		case d.Method == sandbox.UnixMethod:
			r.UnixSocket, r.Allow = true, allow+" --allow-unix-sockets"
		case d.Method == sandbox.ListenMethod:
			// No widening: as for a server (extmcp's refusal), the port
			// would be in the sandbox's own network.
			r.Listen = true
			r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		case d.Method == netproxy.LookupMethod:
			r.Lookup = true
		case d.Port > 0:
			r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			r.Direct = d.Method == sandbox.DirectMethod
		}
		if _, err := permission.ParseHost(r.Host); err == nil && r.Allow == "" && (d.Reason == netproxy.NotAllowed || d.Reason == netproxy.LookupNotAllowed || d.Reason == sandbox.DirectNotAllowed) {
			r.Allow = allow + " --allow-host " + r.Host
		}
		if r.At.IsZero() {
			r.At = time.Now()
		}
		rs = append(rs, r)
	}
	for _, p := range extmcp.RefusedWritePaths(writeErrorText(res)) {
		if slices.Contains(seen, p) {
			// The watch of its writes told of it already.
			continue
		}
		r := extmcp.Refusal{At: time.Now(), Start: start, Extension: ext, Hook: label, Path: p}
		switch {
		case fsutil.Within(dir, p):
			r.Reason = "its extension's folder, read-only to its hooks whatever is allowed; its stderr said a write there was refused"
		case fsutil.Within(ws, p) && w.Write == "":
			r.Reason = "the workspace is read-only to its hooks; its stderr said a write there was refused"
			r.Allow = allow + " --allow-write workspace"
		case fsutil.Within(ws, p):
			r.Reason = "a protected path of the workspace, read-only whatever is allowed; its stderr said a write there was refused"
		default:
			r.Reason = "outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed); its stderr said a write there was refused"
		}
		rs = append(rs, r)
	}
	for _, d := range res.Dropped {
		r := extmcp.Refusal{At: time.Now(), Start: start, Extension: ext, Hook: label, Answer: d.Field, Cut: d.Cut, Reason: d.Why}
		if d.Field == "" {
			r.Answer = extmcp.AllOfAnswer
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return
	}
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return
	}
	_ = extmcp.KeepRefusals(path, rs...)
}

// notExecutable is the exit code of a shell that found the command but
// could not execute it (a script without its execute bit), which it
// tells as "PATH: Permission denied", as a refused write is told.
const notExecutable = 126

// writeErrorText is the hook's stderr to look for refused writes in: all
// of it, but when the shell could not execute the command, the lines
// that say so, which name the script and no write.
func writeErrorText(res exthook.Result) string {
	if res.ExitCode != notExecutable {
		return res.Stderr
	}
	lines := strings.Split(res.Stderr, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasSuffix(strings.TrimSpace(l), ": Permission denied")
	})
	return strings.Join(lines, "\n")
}

// hookWriteReason is why the sandbox refused a hook a write, in the
// person's words, from why the watch of its writes refused it (a
// sandbox.Write* reason), with the command that allows it where one
// does (allow is the command that widens the hook).
func hookWriteReason(why, allow string) (reason, cmd string) {
	switch why {
	case sandbox.WriteWorkspace:
		return "the workspace is read-only to its hooks", allow + " --allow-write workspace"
	case sandbox.WriteExtension:
		return "its extension's folder, read-only to its hooks whatever is allowed", ""
	case sandbox.WriteProtected:
		return "a protected path of the workspace, read-only whatever is allowed: .git, hooks, .env, editors' and agents' settings and instructions (GEMINI.md, CLAUDE.md, AGENTS.md, .mcp.json)", ""
	case sandbox.WriteReadOnly:
		return "the folder of another extension, read-only to every sandboxed process whatever is allowed", ""
	}
	return "outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed)", ""
}
