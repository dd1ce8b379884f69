package cli

import (
	"cmp"
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/claudeswitch"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

func newPluginsCmd(a *app) *cobra.Command {
	var asJSON bool
	var project string
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Show Claude Code's installed plugins, what each runs and where; switch one to gemkit's sandbox",
		Long:  claudeswitch.ListHelp,
	}
	show := func(id string) error {
		cs, dir := claudeswitch.ForPerson(a.getenv, a.cwd, gemkitBinary(a))
		return cs.Show(a.Out, dir, cmp.Or(project, a.cwd, "."), id, asJSON)
	}
	list := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List Claude Code's installed plugins",
		Args: argsUsage(0, 0), RunE: func(*cobra.Command, []string) error { return show("") }}
	desc := &cobra.Command{Use: "describe PLUGIN@MARKETPLACE", Short: "Show one plugin's parts and where each runs",
		Args: argsUsage(1, 1), RunE: func(_ *cobra.Command, args []string) error { return show(args[0]) }}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.PersistentFlags().StringVar(&project, "project", "", "the project whose .claude settings enable plugins (default: the working folder)")
	doc := &cobra.Command{Use: "doctor", Short: "Check that each switched plugin runs in gemkit's sandbox as switched", Args: argsUsage(0, 0),
		RunE: func(*cobra.Command, []string) error {
			cs, dir := claudeswitch.ForPerson(a.getenv, a.cwd, gemkitBinary(a))
			return switchErr(cs.Check(printableWriter{a.Out}, dir, cmp.Or(project, a.cwd, ".")))
		}}
	cmd.AddCommand(list, desc, doc, newPluginsSandboxCmd(a, &project), newPluginsPartCmd(a))
	return cmd
}

// plugins sandbox: claudeswitch switches the plugin, extswitch its twin.
func newPluginsSandboxCmd(a *app, project *string) *cobra.Command {
	var o sandboxFlags
	cmd := &cobra.Command{Use: "sandbox PLUGIN@MARKETPLACE", Args: argsUsage(1, 1), Long: claudeswitch.Help, Short: claudeswitch.Short,
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, dir := claudeswitch.ForPerson(a.getenv, a.cwd, gemkitBinary(a))
			sw := func(st *extension.Store) *extswitch.Switch { return a.switcher(withWritable(a, st)) }
			if o.off && o.widens() {
				return errors.New("--off takes no widening: it gives the plugin back to Claude Code, and the widenings stay recorded for the next switch")
			} else if o.off {
				return cs.Off(a.Out, args[0], sw)
			}
			command := o.commandOf("gemkit plugins sandbox", args[0])
			return switchErr(cs.On(cmd.Context(), printableWriter{a.Out}, dir, claudeswitch.Request{ID: args[0], Project: cmp.Or(*project, a.cwd, "."), Switcher: sw,
				On: extswitch.OnRequest{Hook: o.hook, Widen: func(w *extension.Widening) error { return widen(w, o) }, DefaultProfile: o.defaultProfile,
					InstallScripts: o.installScripts, HostsOnly: o.hostsOnly(), Command: command, Pinning: pinning(a, args[0])},
				Agree: func(ctx context.Context, p *extswitch.Prepared, t claudeswitch.Terms) error {
					return agreeTo(ctx, a, p, command, t.Lines, t.Fetches)
				},
				AgreedErr: func(err error) { tellAgreedErr(a, err) }, Served: servedLines}))
		},
	}
	o.define(cmd.Flags(), "Claude Code")
	return cmd
}
