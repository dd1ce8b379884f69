package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpserver"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// TokenEnv names the environment variable that sets `gemkit mcp --http`'s
// bearer token (otherwise a random one is made and printed).
const TokenEnv = "GEMKIT_MCP_TOKEN"

func newMCPCmd(a *app) *cobra.Command {
	var (
		home, workspace, extDir, addr string
		useHTTP, allowUnconfined      bool
		timeout                       time.Duration
		maxOutput                     int64
		memory                        uint64
		budget                        int
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the enabled extensions' tools and docs to Gemini CLI (or any MCP client)",
		Long: `Serve the executable tools and docs of the extensions enabled in the workspace
over the Model Context Protocol, on stdin/stdout (the default) or, with --http,
as Streamable HTTP on a loopback port with a bearer token.

Set up for Gemini CLI, in one line:

  gemini mcp add -s user gemkit gemkit mcp

or by hand in ~/.gemini/settings.json:

  "mcpServers": { "gemkit": { "command": "gemkit", "args": ["mcp"] } }

Gemini CLI then names the tools mcp_gemkit_<extension>_<tool>, and gets the
summary of the extensions (what ` + "`gemkit extensions summary`" + ` prints) as this
server's instructions, in its project context (in trusted folders).

What it serves:
  - each executable tool of each enabled extension, named <extension>_<tool>
    (characters other than letters, digits, _ and - become _, and a name not
    starting with a letter gets a _ in front; a name longer than 64
    characters, or one that collides, is cut to 55 and followed by _ and 8 hex
    digits of a hash), with an input schema built from its args and a
    description that includes its examples;
  - read_doc {extension, name}, which returns a doc's text, or with name
    skill:NAME the instructions of an agent skill (skills/*/SKILL.md, listed
    in the summary), and each doc and skill as a resource
    gemkit-doc://<extension>/<name> (skill:NAME for a skill).

Every call runs like ` + "`gemkit extensions run`" + `: in the sandbox the extension's
permissions describe, with the same limits, after the person's consent. There
is nobody to ask over MCP: a tool whose extension has no recorded consent
fails with a message saying how to give it (` + "`gemkit extensions run --consent`" + `
once, or consent at install). Failures are tool errors (isError) a model can
read; the server keeps running. A cancelled call kills the tool.

The workspace is the current folder (Gemini CLI starts the server in its own),
or --workspace. Extensions installed, removed, enabled or disabled while it
runs appear or disappear without a restart.

An extension author can ship sandboxed tools to Gemini CLI users by serving
just their extension, with an entry in their own gemini-extension.json:

  "mcpServers": { "tools": { "command": "gemkit",
      "args": ["mcp", "--extension", "${extensionPath}"] } }

With --http the bearer token is $` + TokenEnv + `, or a random one printed on stdout
with the line that adds the server to Gemini CLI.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if home == "" {
				var err error
				if home, err = extension.DefaultHome(); err != nil {
					return err
				}
			}
			st := extension.OpenStore(home)
			if workspace != "" {
				fi, err := os.Stat(workspace)
				if err != nil || !fi.IsDir() {
					return fmt.Errorf("--workspace %s is not a folder", workspace)
				}
				st = st.WithWorkspace(workspace)
			}
			src := disclosure.StoreSource(st)
			if extDir != "" {
				src = disclosure.DirSource(extDir, st.Workspace())
			}
			log := a.log
			runner := &toolrun.Runner{
				Launcher: &sandbox.Launcher{
					AllowUnconfined: allowUnconfined,
					OnDeny: func(d sandbox.Denial) {
						log.Warn("sandbox denial", "denial", d.String())
					},
				},
				Consent:   st,
				Protected: []string{filepath.Dir(st.Dir())},
				Logger:    log,
			}
			// Loading and encoding the tool list allocates a burst that the
			// collector would otherwise chase from a small starting heap
			// (about 3 ms of a 16 ms start with 250 tools); collect less
			// often until the server is ready.
			restoreGC := func() {}
			if a.setGCPercent != nil {
				gc := a.setGCPercent(400)
				restoreGC = func() { a.setGCPercent(gc) }
			}
			srv, err := mcpserver.New(mcpserver.Config{
				Source:  src,
				Runner:  runner,
				Limits:  disclosure.Limits{Timeout: timeout, MaxOutput: maxOutput, MemoryBytes: memory},
				Budget:  budget,
				Version: buildVersion(),
				Logger:  log,
			})
			restoreGC()
			if err != nil {
				return err
			}
			// A server from here on: what the start-up touched of the
			// other commands' code need not stay resident. Reading the
			// memory map takes a millisecond or two, so it is done once
			// the first requests have been answered.
			if a.releasePages != nil {
				release := time.AfterFunc(500*time.Millisecond, func() {
					if _, err := a.releasePages(); err != nil {
						log.Debug("releasing start-up pages", "err", err)
					}
				})
				defer release.Stop()
			}
			if !useHTTP {
				return srv.ServeStdio(cmd.Context(), a.In, a.Out)
			}
			ln, err := mcpserver.ListenLoopback(addr)
			if err != nil {
				return err
			}
			token := a.getenv(TokenEnv)
			if token == "" {
				if token, err = mcpserver.NewToken(); err != nil {
					return err
				}
			} else if len(token) < 16 {
				ln.Close()
				return fmt.Errorf("$%s must be at least 16 characters", TokenEnv)
			}
			url := "http://" + ln.Addr().String() + mcpserver.Path
			fmt.Fprintf(a.Out, "gemkit mcp: serving Streamable HTTP at %s\n", url)
			if a.getenv(TokenEnv) == "" {
				fmt.Fprintf(a.Out, "Add it to Gemini CLI with:\n  gemini mcp add -s user -t http -H \"Authorization: Bearer %s\" gemkit %s\n", token, url)
			} else {
				fmt.Fprintf(a.Out, "The bearer token is $%s.\n", TokenEnv)
			}
			return srv.ServeHTTP(cmd.Context(), ln, token)
		},
	}
	f := cmd.Flags()
	f.StringVar(&home, "home", "", "home folder that holds .gemini (default $"+extension.HomeEnv+" or your home directory)")
	f.StringVar(&workspace, "workspace", "", "workspace the tools run in and enablement is evaluated for (default the current folder)")
	f.StringVar(&extDir, "extension", "", "serve only the extension in this folder (for an extension's own mcpServers entry)")
	f.BoolVar(&useHTTP, "http", false, "serve Streamable HTTP on a loopback port instead of stdio")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "with --http, the loopback address and port to listen on (port 0: any free one)")
	f.BoolVar(&allowUnconfined, "allow-unconfined", false, "run tools even if this machine cannot enforce their permissions (DANGEROUS)")
	f.DurationVar(&timeout, "timeout", toolrun.DefaultTimeout, "kill a tool and everything it started after this long")
	f.Int64Var(&maxOutput, "max-output", toolrun.DefaultMaxOutput, "stop a tool that prints more than this many bytes")
	f.Uint64Var(&memory, "memory", sandbox.DefaultMemoryBytes, "cap each tool's memory at this many bytes")
	f.IntVar(&budget, "budget", disclosure.DefaultBudget, "size of the summary given as instructions, in characters")
	return cmd
}

// buildVersion is the module version of the running binary.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
