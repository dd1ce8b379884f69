// Package cli builds gemkit's command tree. Each command lives in a small
// file of its own: flags in, one package call, output out.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/proc"
	"github.com/spf13/cobra"
)

// Exit codes shared by every command. Commands that decide between a yes
// and a no (ide diff: accepted or rejected) use ExitNo for the no.
const (
	ExitOK    = 0
	ExitNo    = 1
	ExitError = 2
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withExitCode makes a command end with code; err may be nil when the
// command already said everything it had to say.
func withExitCode(code int, err error) error { return &exitError{code: code, err: err} }

// Streams are the standard streams a command uses; tests swap them.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// app is what every command shares, built once per run by the root
// command and handed to each command's constructor (as gopls hands its
// application to its commands): the streams, the logger that --verbose
// tunes, and the enforcer that describe asks. Nothing a command needs
// comes from a process global, so tests run the whole tree through [Run]
// side by side.
type app struct {
	Streams
	// log writes to Err at the level --verbose sets before a command runs.
	log   *slog.Logger
	level *slog.LevelVar
	// enforcer explains how each permission is enforced here; nil leaves
	// the enforcement out of describe.
	enforcer extension.Enforcer
	// setGCPercent and setMemoryLimit tune the process's garbage
	// collector; nil (the default for Run) leaves it alone. Only Main,
	// which owns the process, sets them.
	setGCPercent   func(int) int
	setMemoryLimit func(int64) int64
	// lookupGCEnv says whether the person tuned the collector
	// themselves (GOGC, GOMEMLIMIT): holdGC then leaves it alone.
	lookupGCEnv func(string) (string, bool)
	// releasePages gives back the executable's pages that start-up
	// touched (proc.Pages) and the heap the collector freed; nil, as for
	// Run, leaves the process alone. Only Main sets it: in a test binary
	// the servers run beside other tests.
	releasePages func() (int64, error)
	// lookupEnv and cwd are the environment and the working directory the
	// ide client commands see, as the CLI they stand in for would; nil and
	// "" mean the process's own. Tests give each run its own, so that runs
	// can go side by side.
	lookupEnv func(string) (string, bool)
	cwd       string
	// executable is gemkit's own binary, which a workspace's code
	// intelligence broker runs as (`gemkit codeintel broker`); nil, as
	// for Run (a test binary is not gemkit), runs language servers in
	// the process instead. Only Main sets it.
	executable func() (string, error)
	// args are the arguments Main was given: a switched hook's warm
	// sandbox is keyed by them (extensions_hook_warm_linux.go).
	args []string
	// intel is the code intelligence the run opened, closed at its end.
	intel codeIntels
	// bridgeCommand is how a CLI starts this program's stdio bridge
	// (`gemkit ide bridge`), named in the discovery files a companion
	// writes; nil (as for Run, where the program is a test binary)
	// leaves it out of them.
	bridgeCommand []string
}

// newApp returns the application value for a run on s, with the sandbox's
// own enforcer.
func newApp(s Streams) *app {
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	return &app{
		Streams:  s,
		log:      slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: level})),
		level:    level,
		enforcer: sandboxEnforcer{},
	}
}

// Main runs gemkit with args and returns the process exit code.
func Main(args []string) int {
	// SIGHUP too: a closed terminal, or Emacs quitting (kill-emacs hangs up
	// the process group of a language server), must end a server cleanly,
	// discovery file removed, as SIGTERM does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	a := newApp(Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	a.setGCPercent = debug.SetGCPercent
	a.setMemoryLimit = debug.SetMemoryLimit
	a.lookupGCEnv = os.LookupEnv
	a.executable = os.Executable
	a.args = args
	if exe, err := os.Executable(); err == nil {
		a.bridgeCommand = []string{exe, "ide", "bridge"}
	}
	pages := new(proc.Pages)
	a.releasePages = func() (int64, error) {
		// The heap a client's connect grew and the collector has since
		// freed goes back too, not minutes later through the scavenger.
		debug.FreeOSMemory()
		return pages.Release()
	}
	return run(ctx, args, a)
}

// Run runs gemkit with args on the given streams and returns the exit code.
func Run(ctx context.Context, args []string, s Streams) int {
	return run(ctx, args, newApp(s))
}

func run(ctx context.Context, args []string, a *app) int {
	root := newRoot(a, args...)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	a.closeCodeIntel()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(a.Err, "gemkit:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(a.Err, "gemkit:", err)
	if consentNotGiven(err) {
		return ExitNo
	}
	return ExitError
}

// NewRoot builds the whole command tree writing to s.
func NewRoot(s Streams) *cobra.Command { return newRoot(newApp(s)) }

// newRoot builds the command tree, for args when given: `gemkit mcp`,
// which an MCP client starts for each of its sessions and waits for, gets
// the root and its own command only. The others' commands, flags and
// help cost 0.4 ms of CPU at each start (perf record of cold starts),
// spent where the client waits for its first answer and, on two cores,
// beside the start of the extensions' servers. Nothing of `gemkit mcp`
// sees its siblings (TestMCPCommandAlone).
func newRoot(a *app, args ...string) *cobra.Command {
	var verbose bool
	root := &cobra.Command{
		Use:           "gemkit",
		Short:         "Gemini CLI IDE companion, client and extension manager",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if verbose {
				a.level.Set(slog.LevelDebug)
			}
		},
	}
	root.SetIn(a.In)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug messages to stderr")
	if len(args) > 0 && args[0] == "mcp" {
		root.AddCommand(newMCPCmd(a))
	} else {
		root.AddCommand(newIDECmd(a), newExtensionsCmd(a), newMCPCmd(a), newRunCmd(a), newChatCmd(a), newACPCmd(a), newCodeIntelCmd(a), newPluginsCmd(a), newLoginCmd(a), newLogoutCmd(a))
	}
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group below the root
// (gemkit ide, gemkit extensions) fail on a word that names none of its
// commands, with the nearest ones, instead of printing its help and
// exiting 0 as cobra does: `gemkit extensions instal ./x` must not look
// like success. The root already refuses (cobra's legacyArgs).
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return fmt.Errorf("%s (gemkit %s --help lists them)", msg, strings.TrimPrefix(cmd.CommandPath(), "gemkit "))
	}
}

// getenv reads the app's environment (the process's by default).
func (a *app) getenv(k string) string {
	if a.lookupEnv == nil {
		return os.Getenv(k)
	}
	v, _ := a.lookupEnv(k)
	return v
}

// discoveryDir is the discovery directory under the app's TMPDIR; it is
// discovery.Dir() for the process's own environment.
func (a *app) discoveryDir() string {
	if a.lookupEnv != nil {
		if tmp := a.getenv("TMPDIR"); tmp != "" {
			return filepath.Join(tmp, filepath.FromSlash(ide.DiscoveryDirName))
		}
	}
	return discovery.Dir()
}

// qwenLockDir is where the companion writes Qwen Code's lock file in the
// app's environment; "" (the companion's own default) for the process's.
func (a *app) qwenLockDir() string {
	if a.lookupEnv == nil {
		return ""
	}
	home := a.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return discovery.QwenLockDir(a.getenv, home)
}

// claudeLockDir is where the companion writes Claude Code's lock file in
// the app's environment; "" (the companion's own default) for the
// process's.
func (a *app) claudeLockDir() string {
	if a.lookupEnv == nil {
		return ""
	}
	home, _ := os.UserHomeDir()
	return discovery.ClaudeLockDir(a.getenv, home)
}
