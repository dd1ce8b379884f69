package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/acp"
	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/apikey"
	"github.com/gemkit/gemkit/internal/config"
	"github.com/gemkit/gemkit/internal/model"
)

func newACPCmd(ap *app) *cobra.Command {
	s := ap.Streams
	var f agentFlags
	var permTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve gemkit's agent to an editor over the Agent Client Protocol (stdio)",
		Long: `Acp runs gemkit's agent as an Agent Client Protocol agent (protocol version 1,
newline-delimited JSON-RPC on standard input and output) for editors that
speak ACP: Zed, JetBrains IDEs, Neovim (CodeCompanion, avante.nvim), Emacs
(agent-shell). The editor starts it; standard output carries nothing but the
protocol, logs go to standard error.

Each session's folder (cwd) is the workspace. The agent is the one of
` + "`gemkit run`" + `: the same model, limits, extensions and tools. Files are read through
the editor when it offers to (its unsaved buffers), every edit is shown as a
diff for the person to accept or reject (edits of unprotected files are
accepted unasked in the approval mode autoEdit) and written through the editor when
it offers to (else atomically), an extension tool asks before its first run
(allow once, always, reject; "always" records consent as
` + "`gemkit extensions run --consent`" + ` does), and the MCP servers the editor passes
(stdio and HTTP) are offered to the model as mcp_<server>_<tool>.

Every session is stored (~/.local/share/gemkit/acp-sessions) for the editor
to list, load or resume after a restart; its model and approval mode
(default, autoEdit) are config options.

The model and its credentials come from the flags, the config file and the
environment (GEMINI_API_KEY, ...) as for ` + "`gemkit run`" + `, else the key
` + "`gemkit login`" + ` stored (the editor's Terminal Auth runs it). See docs/acp.md
for each editor's set-up.`,
		Example: `  # Zed, settings.json:
  #   "agent_servers": {"gemkit": {"type": "custom", "command": "gemkit", "args": ["acp"]}}
  gemkit acp --model gemini-2.5-flash`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ignorePeerGone()
			ctx := cmd.Context()
			cfgPath, _ := config.Path(f.configPath)
			// Everything else goes to standard error: one stray line on
			// the protocol's stream breaks the client.
			proto := s.Out
			if s.Out == os.Stdout {
				out, restore, err := protocolStdout()
				if err != nil {
					return fmt.Errorf("set standard output aside for the protocol: %w", err)
				}
				defer restore()
				proto = out
			}
			current, listModels := acpModels(f, ap)
			return acp.Serve(ctx, s.In, proto, acp.Config{
				NewAgent: func(ctx context.Context, as acp.Session) (*agent.Agent, error) {
					return newACPAgent(ctx, f, ap, as)
				},
				Version:           buildVersion(),
				ConfigPath:        cfgPath,
				PermissionTimeout: permTimeout,
				Sessions:          store.ForHome(ap.getenv("HOME")),
				Logout: func() error {
					dir, err := apikey.Dir()
					if err == nil {
						_, err = apikey.Remove(dir)
					}
					return err
				},
				Model:      current,
				ListModels: listModels,
				Stderr:     s.Err,
				Log:        ap.log,
			})
		},
	}
	f.registerModel(cmd)
	// The Terminal Auth method's args are appended to the client's
	// launch of gemkit acp (the protocol's schema) or replace its args
	// (the ACP registry's AUTHENTICATION.md): login works either way.
	cmd.AddCommand(newLoginCmd(ap), newLogoutCmd(ap))
	cmd.Flags().DurationVar(&permTimeout, "permission-timeout", acp.DefaultPermissionTimeout, "how long a permission request (an edit, an extension tool) waits for an answer before it counts as rejected")
	return cmd
}

// newACPAgent builds the agent of one ACP session: the model (the one
// the session chose, else as for run) and the extensions as for run, in
// the session's folder, with the session as
// its host, its tools' consent asked through the session and its words
// and events sent to the client.
func newACPAgent(ctx context.Context, f agentFlags, ap *app, as acp.Session) (*agent.Agent, error) {
	f.workspace = as.Cwd
	if as.Model != "" {
		f.cfg.Model = as.Model
	}
	b, err := f.setup(ctx, ap, func(w model.Wait) { fmt.Fprintln(ap.Err, waitLine(w)) })
	if err != nil {
		return nil, err
	}
	a := b.agent(&f, ap, as.Host, as.Ask)
	a.OnText, a.OnEvent, a.Tools = as.OnText, as.OnEvent, as.Tools
	return a, nil
}

// acpModels is the configured model and how to list the models its
// provider offers (model.List), for the sessions' model option. A config
// that cannot be read offers no list: each session's start says what is
// wrong with it.
func acpModels(f agentFlags, ap *app) (string, func(context.Context) ([]model.Info, error)) {
	cfg, _, err := f.modelConfig()
	if err != nil {
		return "", nil
	}
	return cfg.ModelName(), func(ctx context.Context) ([]model.Info, error) { return model.List(ctx, cfg, ap.modelGetenv()) }
}
