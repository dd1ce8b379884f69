package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/internal/buildinfo"
	"github.com/gemkit/gemkit/internal/claudeswitch"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/mcpserver"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/toolrun"
	"github.com/spf13/cobra"
)

// TokenEnv names the environment variable that sets `gemkit mcp --http`'s
// bearer token (otherwise a random one is made and printed).
const TokenEnv = "GEMKIT_MCP_TOKEN"

// mcpFlags are the flags of `gemkit mcp`.
type mcpFlags struct {
	home, workspace, extDir, addr string
	tokenFile                     string
	useHTTP, allowUnconfined      bool
	timeout, progressInterval     time.Duration
	maxOutput                     int64
	memory                        uint64
	budget, nameLimit             int
	// codeIntel serves the code-intelligence tools; codeIntelGiven says
	// --code-intel was given, which turns them on with --extension too.
	codeIntel, codeIntelGiven bool
	configPath                string
	// servers serves every enabled extension's own stdio MCP servers,
	// sandboxed, not only those switched to gemkit.
	servers bool
	only    string // serve this extension alone (claudeswitch's twins)
}

const mcpLong = `Serve the executable tools and docs of the extensions enabled in the workspace
over the Model Context Protocol, on stdin/stdout (the default) or, with --http,
as Streamable HTTP on a loopback port with a bearer token.

Set up for Gemini CLI, in one line:

  gemini mcp add -s user --trust gemkit gemkit mcp

or by hand in ~/.gemini/settings.json:

  "mcpServers": { "gemkit": { "command": "gemkit", "args": ["mcp"], "trust": true } }

Keep --trust: gemini -p gets none of an untrusted server's tools, and adding
gemkit again without it replaces the entry and drops the trust.

Gemini CLI then names the tools mcp_gemkit_<extension>_<tool>, and gets the
summary of the extensions (what ` + "`gemkit extensions summary`" + ` prints) as this
server's instructions, in its project context (in trusted folders).

What it serves:
  - each executable tool of each enabled extension, named <extension>_<tool>
    (characters other than letters, digits, _ and - become _, and a name not
    starting with a letter gets a _ in front; a name longer than --name-limit,
    48 characters by default, or one that collides, is cut to 9 fewer and
    followed by _ and 8 hex digits of a hash), with an input schema built
    from its args and a description that includes its examples;
  - read_doc {extension, name}, which returns a doc's text, or with name
    skill:NAME the instructions of an agent skill (skills/*/SKILL.md, listed
    in the summary), and each doc and skill as a resource
    gemkit-doc://<extension>/<name> (skill:NAME for a skill).

Every call runs like ` + "`gemkit extensions run`" + `: in the sandbox the extension's
permissions describe, with the same limits, after the person's consent. A tool
whose extension has no recorded consent asks the person in the client when
the client can ask (elicitation, as Claude Code offers: Accept records the
consent); otherwise it is not run, and the result says so to the model and the
person, with how to give it (` + "`gemkit extensions consent EXT --grant`" + `, which runs
nothing, or consent at install). Other failures are tool errors (isError) a
model can read; the server keeps running. A cancelled call kills the tool. Set a
client's own per-call timeout (Claude Code's MCP_TOOL_TIMEOUT, Codex's
tool_timeout_sec) a little above --timeout, so the model hears why a tool ran
out of time; a client that sends a progressToken gets progress every
--progress-interval.

The extensions' own MCP servers (their manifests' mcpServers entries) are
served too, for the extensions switched to gemkit with
` + "`gemkit extensions sandbox NAME`" + ` (Gemini CLI then no longer starts or
connects to them itself) and, with --extension-servers, for every enabled extension (for clients
other than Gemini CLI, which starts the servers of the extensions not switched
itself, so that it would see their tools twice). Each is served only with your
consent to its extension as it is now (the switch records it). A server is
started inside gemkit's sandbox at a client's first use of a list (tools,
prompts, resources; not at initialize), kept while used, stopped after five
idle minutes and started again once if it dies. Its tools and prompts are
named by the rule above (<extension>_<tool>), its resources keep their URIs
(gemkit-mcp://EXTENSION/SERVER/URI where two servers share one); its log,
list_changed and resources/updated reach the client, and the client's
completion/complete of an argument of its prompts and templates reaches it. A
server reads the workspace (its working folder), its extension's folder and
its runtime (node, python); it writes only its extension's data folder,
~/.local/share/gemkit/extension-data/<extension>, which is also its HOME; it
has no network; its environment is the manifest's env and the extension's
settings, and PATH. ` + "`gemkit extensions sandbox NAME --allow-host H --allow-write workspace`" + `
widens that by name. A call is bounded by the entry's timeout, else --timeout
(a start by the same, at most 20 s). A server is served when it answers
initialize and tools/list: a list it declares and cannot give (prompts,
resources, resource templates) is simply not offered. A server that cannot
start, exits or does
not answer is named in the error, with the line of its stderr that says why and
the end of it, and listed as one
tool, <extension>_<server>_unavailable, whose description and answer say why and
what to do; the other servers keep answering. Remote servers (url, httpUrl) are served the same way, but
not sandboxed, since they run elsewhere: gemkit connects to them as Gemini CLI
would, with the entry's headers (declared settings expanded, not your
environment); the switch takes them from Gemini CLI too. Entries that start
gemkit are not served.
None is served with --extension.

The workspace is the current folder (Gemini CLI starts the server in its own),
or --workspace. Extensions installed, removed, enabled or disabled while it
runs appear or disappear without a restart.

Keep the server name short. A client sends each tool to its model under a
prefix of its own (Claude Code and Codex mcp__<server>__, Gemini CLI
mcp_<server>_, OpenCode <server>_) and the model APIs refuse names over 64
characters: the default --name-limit of 48 leaves room for mcp__<server>__
with a server name of up to 9 characters, such as gemkit. With a longer
server name, lower --name-limit to 57 less its length. A client may also
change characters (Codex turns - into _); the summary tells the model so.

An extension author can ship sandboxed tools to Gemini CLI users by serving
just their extension, with an entry in their own gemini-extension.json:

  "mcpServers": { "tools": { "command": "gemkit",
      "args": ["mcp", "--extension", "${extensionPath}"] } }

Code intelligence (on by default; --code-intel=false turns it off, and it is
off with --extension): the code_* tools (code_definition, code_references,
code_hover, …: docs/code-intel.md lists them) answer from language servers
(gopls, typescript-language-server, pyright or basedpyright, rust-analyzer,
clangd: whichever is on PATH; see gemkit codeintel servers). A symbol is named (symbol, with file to tell
same-named ones apart) or given by file, line and column; answers are
workspace-relative path:line:col with the source line, bounded in size, files
outside the workspace named as such. The servers start at the first question,
one per language per workspace shared by every gemkit mcp there (through a
broker), read again the files an agent writes, stop when idle, and go when the
last agent goes. docs/code-intel.md has it all, with the config file's
"codeIntel" object (--config) that adds or changes servers.

Started by hand on a terminal, it says on stderr that it waits for a client:
a client starts it itself (the lines above, or ` + "`claude mcp add -s user gemkit -- gemkit mcp`" + `,
` + "`codex mcp add gemkit -- gemkit mcp`" + `).

With --http the bearer token is $` + TokenEnv + `, or the one in --token-file
(` + "~/.gemini/gemkit/mcp-token" + ` by default, made at first use, mode 0600), so
the set-up lines it prints keep working when the server is started again; the
port is --addr, and with the default (any free port) it prints the --addr that
takes the same port again.`

func newMCPCmd(a *app) *cobra.Command {
	var o mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the enabled extensions' tools and docs to Gemini CLI (or any MCP client)",
		Long:  mcpLong,
		Args:  argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.codeIntelGiven = cmd.Flags().Changed("code-intel")
			return runMCP(cmd.Context(), a, &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.home, "home", "", homeFlagUsage)
	f.StringVar(&o.workspace, "workspace", "", "workspace the tools run in and enablement is evaluated for (default the current folder)")
	f.StringVar(&o.extDir, "extension", "", "serve only the extension in this folder (for an extension's own mcpServers entry)")
	f.BoolVar(&o.useHTTP, "http", false, "serve Streamable HTTP on a loopback port instead of stdio")
	f.StringVar(&o.addr, "addr", "127.0.0.1:0", "with --http, the loopback address and port to listen on (port 0: any free one)")
	f.StringVar(&o.tokenFile, "token-file", "", "with --http and no $"+TokenEnv+", the file that keeps the bearer token, made at first use (default ~/.gemini/gemkit/mcp-token)")
	f.BoolVar(&o.allowUnconfined, "allow-unconfined", false, "run tools even if this machine cannot enforce their permissions (DANGEROUS)")
	f.DurationVar(&o.timeout, "timeout", toolrun.DefaultTimeout, "kill a tool and everything it started after this long")
	f.DurationVar(&o.progressInterval, "progress-interval", mcpserver.DefaultProgressInterval, "how often a running call reports its progress to a client that asks for it")
	f.Int64Var(&o.maxOutput, "max-output", toolrun.DefaultMaxOutput, "stop a tool that prints more than this many bytes")
	f.Uint64Var(&o.memory, "memory", sandbox.DefaultMemoryBytes, "cap each tool's memory at this many bytes")
	f.IntVar(&o.budget, "budget", disclosure.DefaultBudget, "size of the summary given as instructions, in characters")
	f.BoolVar(&o.codeIntel, "code-intel", true, "serve the code-intelligence tools (code_definition, code_references, ...) from language servers; off with --extension unless given")
	f.StringVar(&o.configPath, "config", "", "config file whose codeIntel object adds or changes language servers (default: gemkit/config.json in your config folder)")
	f.BoolVar(&o.servers, "extension-servers", false, "serve every enabled extension's own MCP servers (stdio ones in gemkit's sandbox, remote ones connected to as they are), not only those switched to gemkit (gemkit extensions sandbox NAME): for clients other than Gemini CLI, which starts the others itself; off with --extension")
	f.StringVar(&o.only, "only", "", "serve the extension of this name alone (the twin of a Claude Code plugin switched with gemkit plugins sandbox runs this)")
	cmd.MarkFlagsMutuallyExclusive("extension", "only")
	f.IntVar(&o.nameLimit, "name-limit", disclosure.DefaultNameLimit, fmt.Sprintf("longest tool name, %d to %d: leave room for the client's prefix, such as mcp__gemkit__", disclosure.MinNameLimit, disclosure.MaxNameLen))
	return cmd
}

// runMCP serves the extensions on stdio, or with --http on a loopback
// port, until the client goes or ctx ends.
func runMCP(ctx context.Context, a *app, o *mcpFlags) error {
	ignorePeerGone()
	// No collection through the start (holdGC): gcHoldFor, or until
	// this returns.
	endGCHold := a.holdGC()
	defer endGCHold()
	defer time.AfterFunc(gcHoldFor, endGCHold).Stop()
	home, err := resolveHome(o.home)
	if err != nil {
		return err
	}
	st := extension.OpenStore(home)
	if o.workspace != "" {
		ws, err := a.resolveWorkspace(o.workspace)
		if err != nil {
			return err
		}
		st = st.WithWorkspace(ws)
	}
	st = withWritable(a, st)
	// The placeholders of a tool's absent protected names go with its
	// call (no Linger): they lie in the person's workspace, where a
	// `git add -A` made meanwhile would take them. The servers' need
	// none (the watch of their writes keeps those names).
	launcher := &sandbox.Launcher{
		AllowUnconfined: o.allowUnconfined,
		OnDeny: func(d netproxy.Denial) {
			a.log.Warn("sandbox denial", "denial", d.String())
		},
	}
	defer launcher.Close()
	var servers *extmcp.Manager
	if o.extDir == "" {
		ws, err := a.resolveWorkspace(o.workspace)
		if err != nil {
			return err
		}
		servers = extmcp.NewManager(extmcp.Config{Launcher: launcher, Workspace: ws, Timeout: o.timeout, Version: buildVersion(), Logger: a.log,
			ExtensionFolders: st.ExtensionFolders})
		// Every server goes with the client, before the launcher's
		// placeholders do.
		defer servers.Close()
	}
	srv, err := o.server(a, st, newRunner(st, launcher, mcpserver.Ask, a.log), servers)
	if err != nil {
		return err
	}
	if o.extDir == "" {
		// Gemini CLI runs what a switched extension brings besides its
		// servers: one that changes while gemkit mcp runs is held there
		// at once (extswitch.Switch.Watch).
		holdCtx, stopHolds := context.WithCancel(ctx)
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			a.switcher(st).Watch(holdCtx, a.log)
		}()
		defer func() {
			stopHolds()
			<-watching
		}()
	}
	// A server from here on: what the start-up touched of the other
	// commands' code need not stay resident. Reading the memory map
	// takes a millisecond or two, the collection before it more, and the
	// pages dropped fault back in as the code runs again: it is done once
	// a client's first requests and the extension servers' starts behind
	// them are over (a node server starts in half a second on a quiet
	// machine, when the release used to come in the middle of it).
	if a.releasePages != nil {
		release := time.AfterFunc(releaseAfter, func() {
			if _, err := a.releasePages(); err != nil {
				a.log.Debug("releasing start-up pages", "err", err)
			}
		})
		defer release.Stop()
	}
	if !o.useHTTP {
		if isTerminal(a.In) {
			fmt.Fprintln(a.Err, waitingLine)
		}
		return srv.ServeStdio(ctx, a.In, a.Out)
	}
	return o.serveHTTP(ctx, a, srv, home)
}

// waitingLine is what gemkit mcp says on stderr when started by hand on a
// terminal: the set-up lines of docs/mcp.md, Claude Code's with -s user
// (without it, gemkit is added for the current project only).
const waitingLine = "gemkit mcp: waiting for an MCP client on stdin/stdout; a client starts this itself, so set one up instead (claude mcp add -s user gemkit -- gemkit mcp, gemini mcp add -s user --trust gemkit gemkit mcp, or codex mcp add gemkit -- gemkit mcp; --help for more) and press Ctrl-D here"

// releaseAfter is how long after its start gemkit mcp gives back the
// pages its start-up touched.
const releaseAfter = 5 * time.Second

// server is the MCP server of the store's enabled extensions, or of the
// one in --extension, running tools through runner.
func (o *mcpFlags) server(a *app, st *extension.Store, runner *toolrun.Runner, servers *extmcp.Manager) (*mcpserver.Server, error) {
	src := disclosure.Only(st, o.only)
	if o.extDir != "" {
		src = disclosure.DirSource(o.extDir, st.Workspace())
	}
	src, err := disclosure.NameLimited(src, o.nameLimit)
	if err != nil {
		return nil, fmt.Errorf("--name-limit: %w", err)
	}
	var tools *codeintel.Tools
	if o.codeIntel && (o.extDir == "" || o.codeIntelGiven) {
		ws, err := a.resolveWorkspace(o.workspace)
		if err != nil {
			return nil, err
		}
		if tools, err = a.codeIntel(ws, o.configPath); err != nil {
			return nil, fmt.Errorf("code intelligence: %w", err)
		}
	}
	policy := o.servePolicy(a, st)
	srv, err := mcpserver.New(mcpserver.Config{
		Source:           src,
		Runner:           runner,
		Limits:           disclosure.Limits{Timeout: o.timeout, MaxOutput: o.maxOutput, MemoryBytes: o.memory},
		Budget:           o.budget,
		Version:          buildVersion(),
		Logger:           a.log,
		ProgressInterval: o.progressInterval,
		CodeIntel:        tools,
		Servers:          servers,
		ChooseServers:    claudeswitch.ServeOnly(policy.Choose(), st.Home(), o.only),
		UnservedServers:  policy.Unserved,
	})
	var verr *extension.ValidationError
	if o.extDir != "" && errors.As(err, &verr) {
		return nil, fmt.Errorf("%w\n(`gemkit extensions validate %s` checks it again once fixed)", err, o.extDir)
	}
	return srv, err
}

// servePolicy is the policy of which extensions' servers gemkit mcp
// serves (extmcp.Policy), for the store st: with --extension-servers,
// every enabled extension's.
func (o *mcpFlags) servePolicy(a *app, st *extension.Store) extmcp.Policy {
	p := servePolicy(a, st)
	p.All = o.servers
	return p
}

// serveHTTP serves srv as Streamable HTTP on --addr, behind a bearer
// token, after printing how a client adds it.
func (o *mcpFlags) serveHTTP(ctx context.Context, a *app, srv *mcpserver.Server, home string) error {
	ln, err := httpguard.Listen(o.addr)
	if err != nil {
		return err
	}
	token, from, auth, err := o.token(a, home)
	if err != nil {
		ln.Close()
		return err
	}
	// Tools allowed "localhost" must still not reach this server (it runs
	// tools): the sandbox proxy refuses the ports recorded here, and every
	// tool finds the token file closed, wherever it is.
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		forget, err := permission.RecordServer(tcp.Port, []string{o.tokenFile})
		if err != nil {
			ln.Close()
			return err
		}
		defer forget()
	}
	url := "http://" + ln.Addr().String() + mcpserver.Path
	fmt.Fprintf(a.Out, "gemkit mcp: serving Streamable HTTP at %s\n", url)
	fmt.Fprintf(a.Out, "The bearer token is in %s. Add the server to a client once with:\n", from)
	// Claude Code's -H takes several values, so it goes last there.
	fmt.Fprintf(a.Out, "  claude mcp add -t http gemkit %s -H %q\n", url, auth)
	fmt.Fprintf(a.Out, "  gemini mcp add -s user --trust -t http -H %q gemkit %s\n", auth, url)
	if _, port, _ := net.SplitHostPort(o.addr); port == "0" {
		fmt.Fprintf(a.Out, "The port was free now; start it again on the same one with: gemkit mcp --http --addr %s\n", ln.Addr())
	}
	return srv.ServeHTTP(ctx, ln, token)
}

// token is the bearer token ($GEMKIT_MCP_TOKEN, else the one kept in
// --token-file, made at first use), where the set-up lines say it is,
// and the header they give: they name the token itself only when it is
// kept in a file (so it outlives this process), else the variable.
func (o *mcpFlags) token(a *app, home string) (token, from, auth string, err error) {
	token, from, auth = a.getenv(TokenEnv), "$"+TokenEnv, "Authorization: Bearer $"+TokenEnv
	if token != "" && len(token) < mcpserver.MinTokenLen {
		return "", "", "", fmt.Errorf("$%s must be at least %d characters", TokenEnv, mcpserver.MinTokenLen)
	}
	if token != "" {
		return token, from, auth, nil
	}
	if o.tokenFile == "" {
		o.tokenFile = filepath.Join(gemkitdir.InGeminiHome(home), "mcp-token")
	}
	token, created, err := mcpserver.TokenFile(o.tokenFile)
	if err != nil {
		return "", "", "", fmt.Errorf("--token-file: %w", err)
	}
	from, auth = o.tokenFile, "Authorization: Bearer "+token
	if created {
		from += " (made now; kept for the next start)"
	}
	return token, from, auth, nil
}

// buildVersion is the version of the running binary (buildinfo.Version).
func buildVersion() string { return buildinfo.Version() }
