package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/config"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/lspbroker"
	"github.com/gemkit/gemkit/internal/progsearch"
	"github.com/gemkit/gemkit/internal/workspaceintel"
)

func newCodeIntelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codeintel",
		Short: "Code intelligence for agents: gemkit's language servers and the Gemini CLI hook",
		Long: `Code intelligence gives agents a language server's answers as tools: where a
symbol is defined and used, its type and documentation, a file's outline, the
workspace's declarations, diagnostics, implementations and calls. gemkit mcp
serves them (code_definition, code_references, ...), and gemkit run, chat and
acp offer them to their model. See docs/code-intel.md.

The answers come from gemkit's own language servers (gopls,
typescript-language-server, pyright or basedpyright, rust-analyzer, clangd:
whichever is on PATH; "gemkit codeintel servers" lists them). One server per
language per workspace is shared by every agent there, through a broker that
the first question starts and that ends, with its servers, when the last
agent goes.`,
	}
	cmd.AddCommand(newCodeIntelServersCmd(a), newCodeIntelStatusCmd(a), newCodeIntelHookCmd(a), newCodeIntelBrokerCmd(a))
	return cmd
}

func newCodeIntelServersCmd(a *app) *cobra.Command {
	var configPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List the language servers gemkit knows, and which are installed",
		Long: `List the table of language servers: the built-in entries with the codeIntel
object of gemkit's config file applied (see docs/code-intel.md), each with its
language, file extensions, command, and where the command was found on PATH or
how to install it. It is looked for as gemkit's servers for the current folder
look for it: never in that folder or an activated virtualenv.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := config.Path(configPath)
			if err != nil {
				return err
			}
			cfg, err := langserver.ConfigFile(path)
			if err != nil {
				return err
			}
			table, err := cfg.Table()
			if err != nil {
				return err
			}
			ws, err := a.resolveWorkspace("")
			if err != nil {
				return err
			}
			// Found as the workspace's Pool finds them: never in the
			// workspace or a virtualenv.
			look := langserver.Look(ws, a.environ())
			type row struct {
				Name       string   `json:"name"`
				Language   string   `json:"language"`
				Extensions []string `json:"extensions"`
				Command    []string `json:"command"`
				Found      string   `json:"found,omitempty"`
				Skipped    string   `json:"skipped,omitempty"`
				// Missing says why a program found is not the
				// server: rustup's proxy without its component.
				Missing string `json:"missing,omitempty"`
				Install string `json:"install,omitempty"`
			}
			var rows []row
			for _, s := range table {
				r := row{Name: s.Name, Language: s.Language, Command: s.Command, Install: s.Install}
				for ext := range s.Extensions {
					r.Extensions = append(r.Extensions, ext)
				}
				sort.Strings(r.Extensions)
				found, err := look(s.Command[0])
				var nf *progsearch.NotFoundError
				var mc *langserver.MissingComponentError
				switch {
				case errors.As(err, &nf):
					r.Skipped = nf.Skipped
				case errors.As(err, &mc):
					r.Missing, r.Install = mc.Error(), mc.Fix
				}
				r.Found = found
				rows = append(rows, r)
			}
			if asJSON {
				return writeJSON(a.Out, rows)
			}
			tw := tabwriter.NewWriter(a.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tLANGUAGE\tFILES\tINSTALLED")
			for _, r := range rows {
				found := r.Found
				switch {
				case found != "":
				case r.Skipped != "":
					found = "no (not " + r.Skipped + ": in the workspace or a virtualenv): " + r.Install
				case r.Missing != "":
					found = "no (" + r.Missing + "): " + r.Install
				default:
					found = "no: " + r.Install
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Language, strings.Join(r.Extensions, " "), found)
			}
			tw.Flush()
			fmt.Fprintf(a.Out, "\nA language is served by the first installed server listed for its files. Add or change servers under \"codeIntel\" in %s.\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file (default: gemkit/config.json in your config folder)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCodeIntelStatusCmd(a *app) *cobra.Command {
	var configPath, workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the workspace's broker and the language servers it runs",
		Args:  argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := a.resolveWorkspace(workspace)
			if err != nil {
				return err
			}
			editor := a.editorStatus(cmd.Context(), ws)
			if editor != nil && !asJSON {
				if editor.Clients != "" {
					fmt.Fprintf(a.Out, "%s answers code questions first, with its language clients (%s), through its companion at %s; gemkit's servers answer for the files it has no client for.\n", editor.Editor, editor.Clients, editor.Endpoint)
				} else {
					fmt.Fprintf(a.Out, "%s lends its language clients through its companion at %s, but runs none now: gemkit's servers answer.\n", editor.Editor, editor.Endpoint)
				}
			}
			sock, err := workspaceintel.BrokerSocket(ws, configPath, buildVersion())
			if err != nil {
				return err
			}
			c := &lspbroker.Client{Socket: sock, Logger: a.log}
			defer c.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			var servers []langserver.ServerInfo
			if err := c.Servers(ctx, &servers); err != nil {
				if asJSON {
					return writeJSON(a.Out, map[string]any{"workspace": ws, "editor": editor, "broker": nil, "servers": []any{}})
				}
				fmt.Fprintf(a.Out, "No code intelligence broker runs for %s: the first code question of an agent there starts one.\n", ws)
				return nil
			}
			h := c.Broker()
			if asJSON {
				return writeJSON(a.Out, map[string]any{"workspace": ws, "editor": editor, "broker": map[string]any{"pid": h.Pid, "socket": sock, "version": h.Version}, "servers": servers})
			}
			fmt.Fprintf(a.Out, "Broker for %s: pid %d, socket %s\n", ws, h.Pid, sock)
			if len(servers) == 0 {
				fmt.Fprintln(a.Out, "No language server started yet.")
				return nil
			}
			tw := tabwriter.NewWriter(a.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tSTATE\tPID\tOPEN FILES\tCOMMAND")
			for _, s := range servers {
				state := "stopped"
				switch {
				case s.Failed != "":
					state = "failed: " + s.Failed
				case s.Running && s.LoadError != "":
					state = "could not load the workspace: " + s.LoadError
				case s.Running && s.Indexing != "":
					state = "indexing: " + s.Indexing
				case s.Running:
					state = "ready"
				}
				pid := ""
				if s.Pid > 0 {
					pid = strconv.Itoa(s.Pid)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, state, pid, s.OpenDocs, s.Command)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file (default: gemkit/config.json in your config folder)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace folder (default: the current folder)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCodeIntelBrokerCmd(a *app) *cobra.Command {
	var configPath, workspace, socket, logPath string
	cmd := &cobra.Command{
		Use:    "broker",
		Short:  "Run a workspace's language servers for every gemkit process there (started by gemkit itself)",
		Hidden: true,
		Args:   argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.level.Set(slog.LevelInfo)
			// The log is a file a shell could be made to read: what a
			// tool chose (its folders' names) is escaped in it.
			a.log = slog.New(slog.NewTextHandler(a.Err, &slog.HandlerOptions{Level: a.level, ReplaceAttr: lspbroker.EscapeAttr}))
			if workspace == "" || socket == "" {
				return errors.New("--workspace and --socket are required")
			}
			cfg, err := langserver.ConfigFile(configPath)
			if err != nil {
				return err
			}
			ln, err := lspbroker.Listen(socket)
			if errors.Is(err, lspbroker.ErrRunning) {
				fmt.Fprintln(a.Out, lspbroker.Ready)
				return nil
			}
			if err != nil {
				return err
			}
			pool, err := langserver.New(langserver.Options{Workspace: workspace, Config: cfg, ConfigPath: configPath, Watch: true, Logger: a.log})
			if err != nil {
				ln.Close()
				return err
			}
			defer pool.Close()
			fmt.Fprintln(a.Out, lspbroker.Ready)
			// Nothing more goes to standard output: the process that
			// started the broker read its one line and may be gone.
			if f, ok := a.Out.(*os.File); ok {
				f.Close()
			}
			a.log.Info("code intelligence broker: serving", "workspace", workspace, "socket", socket, "pid", os.Getpid())
			b := &lspbroker.Broker{Handler: pool.Handle, Workspace: pool.Workspace(), Servers: func() any { return pool.Servers() }, Logger: a.log}
			if err := b.Serve(cmd.Context(), ln); err != nil {
				return err
			}
			pool.Close()
			// A broker that ended as it should leaves no log behind (the
			// log of one that failed stays, for its start's error).
			if logPath != "" {
				os.Remove(logPath)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file")
	cmd.Flags().StringVar(&workspace, "workspace", "", "the workspace folder")
	cmd.Flags().StringVar(&socket, "socket", "", "the socket to listen on")
	cmd.Flags().StringVar(&logPath, "log", "", "the log the broker's standard error goes to, removed when it ends as it should")
	return cmd
}
