package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/companion/editorproto"
	"github.com/gemkit/gemkit/companion/lspserver"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/term"
)

// serveOptions are the flags of `gemkit ide serve`.
type serveOptions struct {
	editor      string
	workspace   []string
	ideName     string
	displayName string
	idePID      int
	printEnv    bool
	claude      bool
	qwen        bool
	// watch reports the files saved in the workspace as the open files
	// (terminal front-end only: an editor reports its own).
	watch bool
	// debounce is how long editor events settle before a context update goes
	// out. Hidden: the real Gemini CLI expects the official 50 ms (gemini-cli
	// 0.61.0 packages/vscode-ide-companion/src/open-files-manager.ts); other
	// values are for benchmarks and tests (bench/companion drives 10,000
	// context updates with 1 ms).
	debounce time.Duration
	// containerRoot is the filesystem root probed for container markers
	// (/.dockerenv, /run/.containerenv). Hidden: "/" but for tests.
	containerRoot string
}

// maxDebounce bounds --debounce: longer than this, a context update would
// lag behind the editor enough to mislead the CLI.
const maxDebounce = 10 * time.Second

func addIDEServeCommands(parent *cobra.Command, a *app) {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run an IDE companion server that Gemini CLI, Claude Code and Qwen Code connect to",
		Long: `Run a Gemini CLI IDE companion: an MCP server on 127.0.0.1 that a Gemini CLI
started inside one of the workspace folders finds through its discovery file
(in $TMPDIR/gemini/ide). The CLI then reads the editor's context (open files,
cursor, selection) and shows the changes it proposes as diffs.

It also serves Claude Code (unless --claude=false): a WebSocket MCP endpoint
on a port of its own, announced by a lock file <port>.lock in
$CLAUDE_CONFIG_DIR/ide (else ~/.claude/ide). A Claude Code started in a
workspace folder finds it with /ide or --ide; one started with
CLAUDE_CODE_SSE_PORT set to that port connects by itself. It also
announces itself to Qwen Code (unless --qwen=false) with a lock file
<port>.lock in $QWEN_HOME/ide (else ~/.qwen/ide), which a qwen started in a
workspace folder finds by itself. The agents share the editor: a diff from
any is shown the same way and its outcome goes back to the agent that
proposed it.

Inside a container, where Gemini CLI dials host.docker.internal rather than
127.0.0.1, it reaches the companion through the command the discovery file
names for that case, gemkit ide bridge: no step is needed.

With --editor terminal (the default) gemkit is the editor. It prints where it
serves and the variables to export in another shell, then shows each proposed
change as a unified diff and asks: a accepts, r rejects, e opens the proposal
in $VISUAL or $EDITOR so that you can change it first. Ctrl-D rejects what
waits and stops. A status line shows the CLIs connected and the diffs
waiting, in order, whenever either changes. Unless --watch=false, it watches
the workspace (what git does not ignore) and sends the files you save, in
any editor, as the open files: newest first and active, at most 10.

With --editor stdio an editor plugin drives it with newline-delimited
JSON-RPC 2.0 on stdin and stdout (https://github.com/gemkit/gemkit/blob/main/docs/editor-protocol.md); it stops when
stdin closes.

With --editor lsp it is a language server on stdin and stdout (LSP 3.17):
configure it in any editor that speaks LSP (docs/lsp.md). The workspace and
editor pid come from initialize unless --workspace and --ide-pid are given;
a proposed change is applied to the file's buffer, to accept by saving or
with a code action. It stops on the client's exit or when stdin closes.

In every mode it also stops on SIGINT, SIGTERM or SIGHUP and when the --ide-pid
process ends, and removes its discovery and lock files first.`,
		Example: `  # Serve the current folder and answer diffs in this terminal
  gemkit ide serve

  # Also print export lines to paste into the shell where gemini will run
  gemkit ide serve --print-env --workspace ~/src/project

  # What an editor plugin runs (Neovim here)
  gemkit ide serve --editor stdio --ide-name nvim --ide-display-name Neovim

  # What an editor's language client runs, for every file type
  gemkit ide serve --editor lsp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runIDEServe(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.editor, "editor", "terminal", "who shows diffs: stdio (an editor plugin on stdin/stdout), lsp (any editor's language client on stdin/stdout) or terminal")
	f.StringArrayVar(&o.workspace, "workspace", nil, "workspace folder (repeatable; default: the current directory)")
	f.StringVar(&o.ideName, "ide-name", ide.DefaultIDEName, "short lowercase name of the editor, written to the discovery file")
	f.StringVar(&o.displayName, "ide-display-name", ide.DefaultIDEDisplayName, "name of the editor shown to the person")
	f.IntVar(&o.idePID, "ide-pid", 0, "pid of the editor process the CLI finds among its ancestors (default: the parent process)")
	f.BoolVar(&o.printEnv, "print-env", false, "print the GEMINI_CLI_IDE_* variables (with CLAUDE_CODE_SSE_PORT, QWEN_CODE_IDE_SERVER_PORT and _WORKSPACE_PATH, and REMOTE_CONTAINERS=true in a container) as shell export lines once serving (terminal mode)")
	f.BoolVar(&o.claude, "claude", true, "also serve Claude Code's IDE protocol (WebSocket MCP endpoint and lock file)")
	f.BoolVar(&o.qwen, "qwen", true, "also announce the companion to Qwen Code (a lock file in $QWEN_HOME/ide, else ~/.qwen/ide)")
	f.BoolVar(&o.watch, "watch", true, "terminal front-end: send the files you save in the workspace as the open files (an editor on stdio reports its own)")
	f.DurationVar(&o.debounce, "debounce", ide.ContextDebounce, "how long editor events settle before a context update (benchmarks and tests only)")
	_ = f.MarkHidden("debounce") // the flag exists: MarkHidden cannot fail
	f.StringVar(&o.containerRoot, "container-root", "/", "filesystem root probed for container markers (tests only)")
	_ = f.MarkHidden("container-root")
	parent.AddCommand(cmd)
}

// runIDEServe is `gemkit ide serve`: the flags make the companion's
// configuration, and the front-end the --editor flag names runs the
// whole life of the companion (companion/editorproto, companion/lspserver,
// internal/term).
func runIDEServe(ctx context.Context, a *app, o serveOptions) error {
	cfg, err := o.companionConfig(a)
	if err != nil {
		return err
	}
	switch o.editor {
	case "stdio":
		ignorePeerGone()
		defer a.releaseAfterClientsChange(&cfg)()
		err = editorproto.New(a.In, a.Out, editorproto.Options{Logger: a.log}).Serve(ctx, cfg)
	case "lsp":
		ignorePeerGone()
		ls := lspserver.New(a.In, a.Out, lspserver.Options{Logger: a.log, FixedWorkspace: len(o.workspace) > 0, Version: buildVersion()})
		cfg.OnReady = lspReady(ls)
		err = ls.Serve(ctx, cfg)
	default:
		// Its output piped (`| tee log`), Ctrl-C ends the reader too:
		// a status line written after must not end gemkit before it
		// removes its discovery and lock files.
		ignorePeerGone()
		defer a.releaseAfterClientsChange(&cfg)()
		err = newTerminalEditor(a, o).Serve(ctx, cfg)
	}
	return serveExit(a, err)
}

// serveExit is the exit of `gemkit ide serve` after the front-end's err.
func serveExit(a *app, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lspserver.ErrNoShutdown):
		// LSP: exit without shutdown ends the server with code 1.
		return withExitCode(ExitNo, err)
	case errors.Is(err, term.ErrInputEnded):
		// No input at all (stdin from /dev/null): say why a server that
		// just started stops.
		fmt.Fprintln(a.Err, "gemkit: input ended, so nobody can answer diffs here; stopping. (An editor plugin runs gemkit with --editor stdio.)")
		return nil
	}
	return err
}

// companionConfig checks the flags and turns them into the companion's
// configuration.
func (o serveOptions) companionConfig(a *app) (companion.Config, error) {
	if err := o.check(); err != nil {
		return companion.Config{}, err
	}
	workspace, err := workspaceFolders(a.cwd, o.workspace)
	if err != nil {
		return companion.Config{}, err
	}
	cfg := companion.Config{
		Workspace:     workspace,
		IDEInfo:       ide.IDEInfo{Name: o.ideName, DisplayName: o.displayName},
		PID:           o.idePID, // 0: the parent, or (lsp) the client's process
		WatchPID:      true,
		Debounce:      o.debounce,
		Logger:        a.log,
		DiscoveryDir:  a.discoveryDir(),
		Claude:        o.claude,
		ClaudeLockDir: a.claudeLockDir(),
		Diagnostics:   a.ownDiagnostics(workspace),
		Qwen:          o.qwen,
		QwenLockDir:   a.qwenLockDir(),
		BridgeCommand: a.bridgeCommand,
		OnReady:       o.onReady(a),
	}
	if env, why := discovery.ContainerEnv(o.containerRoot, a.getenv); env != nil {
		cfg.ExtraEnv = env
		a.log.Debug(why)
	}
	return cfg, nil
}

// check refuses flags that do not go together.
func (o serveOptions) check() error {
	switch {
	case o.editor != "stdio" && o.editor != "terminal" && o.editor != "lsp":
		return fmt.Errorf("--editor must be stdio, lsp or terminal, not %q", o.editor)
	case o.editor == "stdio" && o.printEnv:
		return errors.New("--print-env writes to stdout, which --editor stdio uses for the protocol; read the env from the server/ready notification instead")
	case o.editor == "lsp" && o.printEnv:
		return errors.New("--print-env writes to stdout, which --editor lsp uses for the protocol")
	case o.idePID < 0:
		return fmt.Errorf("--ide-pid must be a positive pid, not %d", o.idePID)
	case o.debounce <= 0 || o.debounce > maxDebounce:
		return fmt.Errorf("--debounce must be more than 0 and at most %s (default %s), not %s", maxDebounce, ide.ContextDebounce, o.debounce)
	}
	return nil
}

// onReady is what the command says and does once the companion serves,
// before the front-end hears of it: where it serves (on stderr where the
// protocol holds stdout), which other companion serves the same folders,
// and the pages start-up touched given back. --editor lsp has its own,
// lspReady.
func (o serveOptions) onReady(a *app) func(*companion.Server) {
	return func(srv *companion.Server) {
		warnOtherCompanions(a, srv.Workspace(), srv.DiscoveryPath())
		a.releaseStartupPages()
		if o.editor == "stdio" {
			fmt.Fprintf(a.Err, "gemkit: IDE companion serving %s (discovery file %s)\n", srv.URL(), srv.DiscoveryPath())
			if srv.ClaudePort() != 0 {
				fmt.Fprintf(a.Err, "gemkit: Claude Code endpoint ws://127.0.0.1:%d (lock file %s)\n", srv.ClaudePort(), srv.ClaudeLockPath())
			}
			return
		}
		fmt.Fprintf(a.Out, "gemkit: IDE companion serving %s\n  workspace:      %s\n  discovery file: %s\n",
			srv.URL(), discovery.JoinWorkspace(srv.Workspace()), srv.DiscoveryPath())
		if srv.ClaudePort() != 0 {
			fmt.Fprintf(a.Out, "  claude code:    ws://127.0.0.1:%d (lock file %s)\n", srv.ClaudePort(), srv.ClaudeLockPath())
		}
	}
}

// lspReady says where the companion serves in the language client's log
// (window/logMessage), not on stderr: clients log a server's stderr as
// errors (Neovim's lsp.log marks each line [ERROR]), and these lines are
// for the record. Real errors still go to stderr.
func lspReady(ls *lspserver.Server) func(*companion.Server) {
	return func(srv *companion.Server) {
		ls.LogInfo(fmt.Sprintf("gemkit: IDE companion serving %s for %s (discovery file %s)", srv.URL(), strings.Join(srv.Workspace(), ", "), srv.DiscoveryPath()))
		if srv.ClaudePort() != 0 {
			ls.LogInfo(fmt.Sprintf("gemkit: Claude Code endpoint ws://127.0.0.1:%d (lock file %s)", srv.ClaudePort(), srv.ClaudeLockPath()))
		}
	}
}

// releaseAfterClientsChange gives the executable's pages back once a
// change of cfg's clients has settled (companion.ReleaseAfterClientsChange).
func (a *app) releaseAfterClientsChange(cfg *companion.Config) (stop func()) {
	if a.releasePages == nil {
		return func() {}
	}
	return companion.ReleaseAfterClientsChange(cfg, func() {
		if _, err := a.releasePages(); err != nil {
			a.log.Debug("releasing pages after a client changed", "err", err)
		}
	})
}

// releaseStartupPages gives back what the start-up touched of the other
// commands' code (the model SDKs, mostly), once the companion serves: it
// need not stay resident.
func (a *app) releaseStartupPages() {
	if a.releasePages == nil {
		return
	}
	if n, err := a.releasePages(); err != nil {
		a.log.Debug("releasing start-up pages", "err", err)
	} else {
		a.log.Debug("released start-up pages", "bytes", n)
	}
}

// workspaceFolders turns the --workspace flags (default: the current
// directory, cwd unless it is "") into workspace folders resolved by
// fsutil.Workspace.
func workspaceFolders(cwd string, flags []string) ([]string, error) {
	if len(flags) == 0 {
		wd, err := os.Getwd()
		if cwd != "" {
			wd, err = cwd, nil
		}
		if err != nil {
			return nil, fmt.Errorf("current directory: %w", err)
		}
		flags = []string{wd}
	}
	out := make([]string, 0, len(flags))
	for _, f := range flags {
		ws, err := fsutil.Workspace(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ws)
	}
	return out, nil
}

// warnOtherCompanions says when another live companion already serves one
// of the workspace folders: a CLI started there then connects to one of
// them by the real CLI's order, not necessarily this one, and a forgotten
// `gemkit ide serve` in another terminal looks like a silent failure.
func warnOtherCompanions(a *app, workspace []string, own string) {
	seen := map[string]bool{own: true}
	for _, folder := range workspace {
		ch, err := discovery.Choose(discovery.ChooseOptions{Dir: a.discoveryDir(), Cwd: folder, Getenv: a.getenv})
		if err != nil {
			continue
		}
		for _, c := range ch.Serving() {
			if seen[c.Path] || !discovery.Listens(c.Port) {
				continue
			}
			seen[c.Path] = true
			who := "another companion"
			if c.Contents.IDEInfo != nil && c.Contents.IDEInfo.DisplayName != "" {
				who += " (" + c.Contents.IDEInfo.DisplayName + ")"
			}
			fmt.Fprintf(a.Err, "gemkit: warning: %s already serves %s on port %d (%s): a gemini started there connects to one of the two by the CLI's own order, not necessarily this one. Stop the other, or paste this one's export line first; `gemkit ide doctor` lists them.\n",
				who, folder, c.Port, c.Path)
		}
	}
}

// ignorePeerGone keeps gemkit, serving a peer on stdin and stdout (an
// editor's plugin or language client, an agent), alive when the peer
// goes: the peer owns the other ends of stdout and stderr, and once it
// has gone (killed, or quit after its wait: Vim stops its job with
// SIGTERM after 2 s), a write there (a reply, the log line saying the
// peer went) would end gemkit by SIGPIPE before it removes its
// discovery file, stops its sandboxed servers and takes away what it
// made in the workspace. Caught, the write fails with EPIPE and the
// shutdown goes on. Caught rather than ignored (signal.Ignore): an
// ignored signal stays ignored across exec, in every program gemkit
// starts (a tool's shell pipeline would then write on after its reader
// went), where a caught one is back to its default.
func ignorePeerGone() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }
