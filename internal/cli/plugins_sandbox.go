package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/claudeswitch"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// The switch of a Claude Code plugin (gemkit plugins sandbox P@M), as
// the person sees it. The conversion, Claude Code's settings and the
// holds are claudeswitch's; consent, pins and widenings the extension
// switch's, on the plugin's twin extension in gemkit's plugin home.

func newPluginsSandboxCmd(a *app, project *string) *cobra.Command {
	var o sandboxFlags
	cmd := &cobra.Command{
		Use:   "sandbox PLUGIN@MARKETPLACE",
		Short: "Run a Claude Code plugin's MCP servers and hooks in gemkit's sandbox instead of unconfined in Claude Code",
		Long: `Switch a Claude Code plugin to gemkit's sandbox. gemkit makes its twin: a copy
of the plugin's folder as you agree to it, whose MCP servers gemkit mcp serves in
the sandbox and whose hooks gemkit's hook runner runs there, and a plugin of the
same name in gemkit's directory marketplace (gemkit-sandbox) that Claude Code
loads instead, with the same skills, agents and commands (the bytes you agreed
to) and gemkit's runners for everything that runs. In Claude Code's user
settings the plugin is disabled, its twin enabled, each of its servers denied
by name (plugin:P:S), and gemkit's marketplace named; the bytes replaced are
kept, and --off gives them back.

Consent and widenings are those of gemkit extensions sandbox, on the twin. A
plugin Claude Code updates after you agreed is held: nothing of it runs, and
list, describe and doctor say what changed, until you run this again.

Refused: a plugin enabled in a project's .claude settings (user settings cannot
turn it off there), and anything gemkit cannot convert exactly: a variable other
than ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA} and ${user_config.KEY}, a hook
that is not a command, a link out of the plugin's folder, a file Claude Code and
gemkit could read differently. docs/claude-code-plugins.md has the details.`,
		Example: `  gemkit plugins sandbox notes@my-marketplace
  gemkit plugins sandbox notes@my-marketplace --allow-host api.example.com
  gemkit plugins sandbox notes@my-marketplace --off`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.off {
				if o.widens() {
					return errors.New("--off takes no widening: it gives the plugin back to Claude Code, and the widenings stay recorded for the next switch")
				}
				return pluginsOff(a, args[0])
			}
			return pluginsOn(cmd.Context(), a, args[0], cmp.Or(*project, a.cwd, "."), o)
		},
	}
	o.define(cmd.Flags(), "Claude Code")
	return cmd
}

// claudeSwitch is the plugin switch of the app's person.
func (a *app) claudeSwitch() (*claudeswitch.Switch, string) {
	dir := claudeplugin.Folder(a.getenv, a.getenv("HOME"), a.cwd)
	return claudeswitch.New(a.getenv("HOME"), dir, gemkitBinary(a)), dir
}

// pluginsOn switches the plugin id, once the person agrees to its twin.
func pluginsOn(ctx context.Context, a *app, id, project string, o sandboxFlags) error {
	cs, dir := a.claudeSwitch()
	h, err := claudeplugin.List(dir, project)
	if err != nil {
		return err
	}
	p, err := h.Find(id)
	if err != nil {
		return err
	}
	conf, err := claudeswitch.UserConfig(cs.Settings, id)
	if err != nil {
		return withExitCode(ExitNo, err)
	}
	plan, err := cs.Prepare(p, conf)
	if err != nil {
		return withExitCode(ExitNo, err)
	}
	st := withWritable(a, extension.OpenStore(cs.Home))
	in, err := st.Get(plan.Twin.Name)
	if err != nil {
		return err
	}
	if in.Extension == nil {
		return fmt.Errorf("the twin of %s cannot be read: %w", extension.Printable(id), in.Err)
	}
	command := o.commandOf("gemkit plugins sandbox", id)
	sw := a.switcher(st)
	prep, err := sw.Prepare(ctx, in, extswitch.OnRequest{Hook: o.hook, Widen: func(w *extension.Widening) error { return widen(w, o) },
		DefaultProfile: o.defaultProfile, InstallScripts: o.installScripts, HostsOnly: o.hostsOnly(), Command: command,
		Pinning: pinning(a, plan.Twin.Name)})
	if err != nil {
		return switchErr(err)
	}
	if prep.RemoteOnly {
		return withExitCode(ExitNo, fmt.Errorf("%s has only remote MCP servers and no hook: nothing of it runs on this machine, so there is nothing to sandbox; it stays Claude Code's", extension.Printable(id)))
	}
	defer prep.Release()
	fmt.Fprintf(a.Out, "%s is switched as its twin extension %s (a copy of %s):\n", extension.Printable(id), plan.Twin.Name, p.Root)
	if err := agree(ctx, a, prep, command); err != nil {
		return err
	}
	on, err := prep.Commit(ctx)
	tellAgreedErr(a, on.AgreedErr)
	if err != nil {
		return switchErr(err)
	}
	done, err := cs.Enable(plan)
	if err != nil {
		return err
	}
	tellPluginSwitched(a, p, plan.Twin, on, done)
	return nil
}

// tellPluginSwitched says what the switch of p did.
func tellPluginSwitched(a *app, p *claudeplugin.Plugin, t *claudeswitch.Twin, on extswitch.On, done claudeswitch.On) {
	out := printableWriter{a.Out}
	fmt.Fprintf(out, "\nSwitched %s to gemkit's sandbox. Claude Code no longer loads it (enabledPlugins in %s) and loads its twin %s instead, with the same skills, agents and commands, as you agreed to them.\n",
		p.ID, done.Settings, claudeswitch.TwinID(p.Name))
	served, notServed := servedLines(t.Name, on.Checks)
	if len(t.Servers) > 0 {
		fmt.Fprintf(out, "Its MCP servers %s: Claude Code no longer starts them (deniedMcpServers: %s); gemkit mcp serves them in its sandbox (the twin's server %s)%s.\n",
			strings.Join(t.Servers, ", "), strings.Join(done.Denied, ", "), claudeswitch.ServerName, servedSuffix(served))
	}
	for _, l := range notServed {
		fmt.Fprintln(out, l)
	}
	if len(t.Hooks) > 0 {
		fmt.Fprintf(out, "Its hooks %s run in gemkit's sandbox: the twin's hooks run each through gemkit's hook runner, on the same event and matcher.\n", strings.Join(t.Hooks, ", "))
	}
	if n := len(t.LSP) + len(t.Monitors); n > 0 {
		fmt.Fprintf(out, "Its LSP servers and monitors (%s) run in gemkit's sandbox through gemkit plugins part.\n", strings.Join(append(append([]string{}, t.LSP...), t.Monitors...), ", "))
	}
	fmt.Fprintln(out, "Claude Code takes it at its next start (or /reload-plugins in a running session).")
	fmt.Fprintf(out, "If Claude Code updates %s, its twin is held until you agree again. Undo: gemkit plugins sandbox %s --off\n", p.ID, p.ID)
}

func servedSuffix(served []string) string {
	if len(served) == 0 {
		return ""
	}
	return ", listed now: " + strings.Join(served, ", ")
}

// pluginsOff gives the plugin id back to Claude Code: its settings as
// they were, its twin plugin gone, its twin extension switched off.
func pluginsOff(a *app, id string) error {
	cs, _ := a.claudeSwitch()
	recs, err := cs.ReadRecords()
	if err != nil {
		return err
	}
	rec, ok := recs.Plugins[id]
	if !ok {
		fmt.Fprintf(a.Out, "%s is not switched to gemkit: Claude Code runs it itself.\n", extension.Printable(id))
		return nil
	}
	st := withWritable(a, extension.OpenStore(cs.Home))
	if _, err := a.switcher(st).Off(rec.Twin); err != nil {
		return err
	}
	off, err := cs.Disable(id)
	if err != nil {
		return err
	}
	if off.Restored {
		fmt.Fprintf(a.Out, "Restored %s byte for byte as it was before the switch.\n", off.Settings)
	} else {
		fmt.Fprintf(a.Out, "%s changed since the switch, so gemkit took out only its own edits (the plugin's enablement as it was, its twin, its denied servers, gemkit's marketplace when no other plugin is switched).\n", off.Settings)
	}
	fmt.Fprintf(a.Out, "%s is Claude Code's again, which runs its servers and hooks unconfined at its next start. Switch again: gemkit plugins sandbox %s\n", extension.Printable(id), extension.Printable(id))
	return nil
}
