package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/claudeswitch"
	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/pluginpart"
	"github.com/gemkit/gemkit/internal/sandbox"
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
(gemkit extensions sandbox NAME --hook HOOK --allow-host H). With --agent claude
(a switched plugin's twin), its variables and the reading of its answer are
Claude Code's: never an updatedInput, "allow" or "approve" (package hookout).

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
	cmd.Flags().String("agent", "gemini", "the agent that runs the hook: gemini, or claude")
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

// warmServeFlag is the hidden flag of `gemkit extensions hook` that
// makes it a hook's warm server (extswitch.WarmServer), with the key it
// serves.
const warmServeFlag = "warm-serve"

// runHook runs the hook label of the extension name. A warm sandbox
// left by an earlier run takes the run before this (package hookclient,
// as the program starts); this is the cold way, which leaves one for
// the next run.
func runHook(cmd *cobra.Command, a *app, name, label string) error {
	lh, err := loadHook(cmd, a, name, label)
	if err != nil {
		return err
	}
	h := lh.H
	// Gemini CLI stops a hook at its timeout with SIGTERM: the sandbox
	// goes with gemkit then.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := func(start time.Time, res exthook.Result) {
		extmcp.KeepHookRefusals(extmcp.HookRun{Extension: name, Hook: label, Workspace: h.Workspace, Dir: h.Dir, Widening: h.Widening,
			Start: start, ExitCode: res.ExitCode, Denied: res.Denied, Stderr: res.Stderr, Dropped: res.Dropped, To: h.AgentName()})
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
		warm.Leave(h.Workspace, "--"+warmServeFlag, warm.Key())
	}
	// A run stopped at its timeout ends with words, not an exit status
	// alone (exthook's answer wrote them).
	if res.ExitCode != 0 {
		return withExitCode(res.ExitCode, nil)
	}
	return nil
}

// loadHook reads the hook label of the extension name from the store
// the flags name, or says in a hook's refusal why it does not run
// (extswitch.Switch.LoadHook), for the workspace gemkit runs in.
func loadHook(cmd *cobra.Command, a *app, name, label string) (*extswitch.LoadedHook, error) {
	st, in, err := openInstalled(cmd, name)
	if err != nil {
		return nil, hookRefusal("%v", err)
	}
	lh, err := a.switcher(st).LoadHook(in, name, label, os.Getwd, os.Environ())
	if err == nil {
		flag, _ := cmd.Flags().GetString("agent") // "" where the command has no such flag
		lh.H.Agent, err = exthook.AgentOf(flag)
	}
	if err != nil {
		return nil, hookRefusal("%v", err)
	}
	// A switched Claude Code plugin's twin is held while the plugin
	// Claude Code has is not what the person agreed to: its hooks run
	// nothing (the event's no-op, Claude Code's non-blocking error), as
	// gemkit mcp --only serves none of its servers.
	if lh.H.Agent == exthook.AgentClaude {
		if err := heldTwin(st.Home(), name); err != nil {
			return nil, hookRefusal("%v", err)
		}
	}
	return lh, nil
}

// heldTwin says why the twin name of the plugin home home is held
// (claudeswitch.Held), nil when it is not: asked before each run, cold
// or warm.
func heldTwin(home, name string) error {
	if why := claudeswitch.Held(home, name); why != "" {
		return fmt.Errorf("%s is held: %s", name, why)
	}
	return nil
}

// warmHook is the warm side of h's run, or nil where there is none: a
// run in a test's process (Run, not Main), streams that are not the
// process's descriptors, or no session to bind a warm sandbox to.
func warmHook(a *app, h *exthook.Hook) *extswitch.WarmClient {
	if a.executable == nil || a.args == nil || slices.Contains(a.args, "--") {
		return nil
	}
	_, ok1 := a.In.(*os.File)
	_, ok2 := a.Out.(*os.File)
	_, ok3 := a.Err.(*os.File)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	exe, _ := a.executable()
	return extswitch.Warm(h, exe, a.args, a.log)
}

// serveWarmHook is the warm server of lh's runs (extswitch.WarmServer):
// key must be its run's, as started by this run's arguments but the
// flag that makes it the server.
func serveWarmHook(ctx context.Context, cmd *cobra.Command, a *app, lh *extswitch.LoadedHook, name, label, key string, done func(time.Time, exthook.Result)) error {
	args := slices.Clone(a.args)
	if i := slices.Index(args, "--"+warmServeFlag); i >= 0 && i+1 < len(args) {
		args = slices.Delete(args, i, i+2)
	}
	srv := &extswitch.WarmServer{Hook: lh, Args: args, Key: key, Log: a.log, Done: done,
		Reload: func() (*extswitch.LoadedHook, error) { return loadHook(cmd, a, name, label) }}
	if st, err := openStore(cmd); err == nil && lh.H.Agent == exthook.AgentClaude {
		srv.Held = func() error { return heldTwin(st.Home(), name) }
	}
	if err := srv.Serve(ctx); err != nil {
		return withExitCode(ExitNo, err)
	}
	return nil
}

// newPluginsPartCmd is gemkit plugins part (package pluginpart), run in the working folder Claude Code gives it.
func newPluginsPartCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "part <extension> lsp|monitor <name>", Short: pluginpart.Short, Long: pluginpart.Long, Args: argsUsage(3, 3), Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err == nil {
				// A held twin's part does not start, as its hooks do not run.
				err = heldTwin(st.Home(), args[0])
			}
			r := &pluginpart.Run{Store: st, In: in, Kind: args[1], Name: args[2], Environ: a.environ()}
			return withExitCode(r.Main(cmd.Context(), err, a.In, a.Out, a.Err))
		}}
	cmd.Flags().String("home", "", "the plugin home, which holds the twin extensions' .gemini")
	return cmd
}
