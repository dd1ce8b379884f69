package cli

import (
	"bufio"
	"cmp"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/claudeplugin"
)

func newPluginsCmd(a *app) *cobra.Command {
	var asJSON bool
	var project string
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Show Claude Code's installed plugins and what each runs",
		Long: `Show the plugins installed in Claude Code ($CLAUDE_CONFIG_DIR, else
~/.claude), read as Claude Code 2.1.330 reads them: each plugin's
marketplace, version, the scopes that enable it (user settings, the
project's .claude/settings.json and settings.local.json), and its parts:
MCP servers, hooks, LSP servers, monitors, skills, agents and commands.

Every part runs unconfined, in Claude Code's own process tree. The
sandbox switch for plugins is to come; these commands only show.`,
	}
	show := func(id string) error {
		h, err := claudeplugin.List(claudeplugin.Folder(a.getenv, a.getenv("HOME"), a.cwd), cmp.Or(project, a.cwd, "."))
		if err != nil {
			return err
		}
		out := bufio.NewWriter(a.Out)
		defer out.Flush()
		var v any = h
		if id != "" {
			p, err := h.Find(id)
			if err != nil {
				return err
			}
			if v = p; !asJSON {
				return claudeplugin.WriteDescribe(out, p)
			}
		}
		if asJSON {
			return writeJSON(out, v)
		}
		return claudeplugin.WriteList(out, h)
	}
	list := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List Claude Code's installed plugins",
		Args: argsUsage(0, 0), RunE: func(*cobra.Command, []string) error { return show("") }}
	desc := &cobra.Command{Use: "describe PLUGIN@MARKETPLACE", Short: "Show one plugin's parts and where each runs",
		Args: argsUsage(1, 1), RunE: func(_ *cobra.Command, args []string) error { return show(args[0]) }}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.PersistentFlags().StringVar(&project, "project", "", "the project whose .claude settings enable plugins (default: the working folder)")
	cmd.AddCommand(list, desc, newPluginsPartCmd(a))
	return cmd
}
