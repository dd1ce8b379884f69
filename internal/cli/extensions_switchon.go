package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// The switch on (gemkit extensions sandbox NAME), as the person sees it:
// the terms shown and agreed to, and the words that say what it did.
// The switch itself is extswitch's (Switch.Prepare, Prepared.Commit);
// the command's flags are in extensions_sandbox.go.

// switchOn switches in's servers, its agents' servers and its command
// hooks to gemkit with the widening o asks for, after the person agrees
// (the consent record then holds the new terms).
func switchOn(ctx context.Context, a *app, st *extension.Store, in *extension.Installed, o sandboxFlags, command string) error {
	sw := a.switcher(st)
	p, err := sw.Prepare(ctx, in, extswitch.OnRequest{Hook: o.hook, Widen: func(w *extension.Widening) error { return widen(w, o) },
		DefaultProfile: o.defaultProfile, InstallScripts: o.installScripts, HostsOnly: o.hostsOnly(), Command: command,
		Pinning: pinning(a, in.Extension.Manifest.Name)})
	if err != nil {
		return switchErr(err)
	}
	if p.RemoteOnly {
		return widenRemote(ctx, a, st, in.Extension, o, command)
	}
	defer p.Release()
	if err := agree(ctx, a, p, command); err != nil {
		return err
	}
	on, err := p.Commit(ctx)
	tellAgreedErr(a, on.AgreedErr)
	tellReleased(a, p.Ext.Manifest.Name, on.Released)
	if err != nil {
		return switchErr(err)
	}
	tellSwitched(a, sw, p, on, o.hook)
	return nil
}

// hostsOnly reports whether o asks for hosts alone, or the default
// profile: all an extension with remote servers only takes.
func (o sandboxFlags) hostsOnly() bool {
	return o.hook == "" && (len(o.hosts) > 0 || o.defaultProfile) && o.write == "" && !o.unixSockets && len(o.credentials) == 0 && len(o.env) == 0 && o.dataLimit == "" && !o.installScripts
}

// agree shows what the switch gives the servers and hooks (what changed
// since the person agreed first) and asks the person to agree when it is
// more than they had, then repairs the copied links.
func agree(ctx context.Context, a *app, p *extswitch.Prepared, command string) error {
	return agreeTo(ctx, a, p, command, extension.ConsentTextWith(p.Ext, "Switching to gemkit's sandbox:", p.Next()), geminiFetches)
}

// agreeTo is agree with the terms' lines and what the host does with a
// package-runner server (fetches) given: a plugin's are Claude Code's
// (claudeswitch.Terms).
func agreeTo(ctx context.Context, a *app, p *extswitch.Prepared, command string, terms []string, fetches string) error {
	name := p.Ext.Manifest.Name
	if p.State.Notice != "" {
		// What changed since the person agreed, before what they agree to.
		fmt.Fprintln(a.Out, extension.Printable(p.State.Notice))
	}
	if len(p.Links) > 0 {
		fmt.Fprintln(a.Out, extension.CopiedLinksWords(p.Links)+" The switch makes them so once you agree.")
	}
	for _, l := range terms {
		fmt.Fprintln(a.Out, l)
	}
	writePackageLines(a, p.Plan, fetches)
	if p.NeedsAgreement() {
		a.readBeforeAgreeing(a.Out)
		if ok, err := a.personConfirms(ctx, name, "`"+command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}
	n, err := p.Relink()
	if err != nil {
		return switchErr(err)
	}
	if n > 0 {
		fmt.Fprintf(a.Out, "Made %d link%s relative again.\n", n, extswitch.Plural(n))
	}
	return nil
}

// geminiFetches says what Gemini CLI does with the same manifest: the
// person reads it beside what gemkit does.
const geminiFetches = "Gemini CLI, with the same manifest, runs the runner itself at each start: it fetches the package from the registry (for a bare name, the newest that runs on your node; for @latest, the latest) with your rights and runs whatever it got, which nobody agreed to."

// writePackageLines writes what resolving said, under a heading.
func writePackageLines(a *app, plan *extswitch.Plan, fetches string) {
	if plan == nil || len(plan.Lines) == 0 {
		return
	}
	fmt.Fprintln(a.Out, "\nIts servers' packages, pinned: gemkit runs each from its tree, never from the registry. "+fetches)
	for _, l := range plan.Lines {
		fmt.Fprintf(a.Out, "  %s\n", extension.Printable(l))
	}
}

// tellSwitched says what the switch did: what Gemini CLI no longer
// starts and who serves it now, the agents' servers and the hooks, what
// stays Gemini CLI's, then the widenings and how to take them back.
func tellSwitched(a *app, sw *extswitch.Switch, p *extswitch.Prepared, on extswitch.On, hook string) {
	m, name, parts := p.Ext.Manifest, p.Ext.Manifest.Name, p.Parts
	// What the manifest named is escaped where it is put in words; the
	// writer escapes what a word missed (a hook's reason quoting its
	// command).
	out := printableWriter{a.Out}
	local := extension.SandboxedServers(m)
	if on.Held {
		fmt.Fprintf(out, "\nNot switched whole: gemkit holds %s in Gemini CLI, as said above, and Gemini CLI runs none of it. What the switch took:\n", extension.Printable(name))
	}
	served, notServed := servedLines(name, on.Checks)
	if len(local) > 0 {
		fmt.Fprintf(out, "\nSwitched: %s%s. Consent recorded to %s as it is now.\n",
			notStarted(m, p.Path), servedWords(m, served), extension.Printable(name))
	} else {
		fmt.Fprintf(out, "\nSwitched %s to gemkit. Consent recorded to it as it is now.\n", extension.Printable(name))
	}
	for _, l := range notServed {
		fmt.Fprintln(out, l)
	}
	if words := agentServerWords(parts.Agents); words != "" {
		fmt.Fprintf(out, "Its agents' MCP servers %s: Gemini CLI no longer starts them when the agent runs (mcp.excluded); gemkit mcp serves them in its sandbox to the main agent, and an agent that lists no tools of its own gets them from there.\n", words)
	}
	for _, l := range switchedHookLines(parts, on.Off, p.Path) {
		fmt.Fprintln(out, l)
	}
	for _, c := range extension.ContainerServers(m) {
		fmt.Fprintf(out, "Not switched: %s, %s.\n", extension.Printable(c), extension.ContainerWords(extension.ContainerCommand(m.MCPServers[c])))
	}
	for _, n := range parts.Names {
		if others, first := sw.OthersWith(name, n); len(others) > 0 {
			fmt.Fprintf(out, "The server name %s is also the extensions' %s: Gemini CLI keys servers by name and starts only %s's of those not switched; gemkit mcp serves each switched one's, apart. mcp.excluded keeps %s while any switched extension needs it.\n",
				extension.Printable(n), extswitch.PrintableNames(others), extension.Printable(first), extension.Printable(n))
		}
	}
	if (len(local) > 0 || p.AgentLocal()) && p.Settings.Gemkit == "" {
		fmt.Fprintln(out, "Gemini CLI reaches them through gemkit mcp; add it once: gemini mcp add -s user --trust gemkit gemkit mcp")
	}
	tellWidened(a, sw, p, hook)
	// The clients hide most of a failed call (Gemini CLI 0.61 shows none
	// of its text), so the person is told where the refusals are said.
	fmt.Fprintf(out, "What the sandbox refuses %s: gemkit extensions doctor, with the command that allows each.\n", extswitch.Them(len(local)+len(parts.Hooks)))
	fmt.Fprintf(out, "Undo: gemkit extensions sandbox %s %s\n", extension.Printable(name), map[bool]string{false: "--off", true: "--default-profile"}[m.AgentPlugin])
}

// tellWidened says what the servers and hooks may now do beyond their
// profile, and how to take it back: the consent text says it inside each
// server's line, where a widening just given is easy to miss. Then the
// notes on what the widening will not do.
func tellWidened(a *app, sw *extswitch.Switch, p *extswitch.Prepared, hook string) {
	m, name := p.Ext.Manifest, extension.Printable(p.Ext.Manifest.Name)
	switch {
	case hook != "" && !p.HW[hook].Empty():
		fmt.Fprintf(a.Out, "Allowed the hook %s beyond the hook profile: %s. Back to it: gemkit extensions sandbox %s --hook %s --default-profile\n", hook, p.HW[hook].Words(), name, hook)
	case hook != "" && !p.Old.HookWidening[hook].Empty():
		fmt.Fprintf(a.Out, "The hook %s is back to the hook profile: nothing allowed beyond it.\n", hook)
	case hook != "":
	case !p.W.Empty():
		fmt.Fprintf(a.Out, "Allowed beyond the default profile: %s. Back to it: gemkit extensions sandbox %s --default-profile\n", p.W.Words(), name)
	case !p.Old.Widening.Empty():
		fmt.Fprintln(a.Out, "Back to the default profile: nothing allowed beyond it.")
	}
	if p.Scripts && len(p.Plan.Pins) > 0 {
		fmt.Fprintf(a.Out, "Install scripts of its servers' packages: allowed, run after npm fetched the packages, in a sandbox with no network and none of your npm configuration. Back to off: gemkit extensions sandbox %s --default-profile\n", name)
	}
	var settings []extension.SettingState
	if in, err := sw.Store.Get(m.Name); err == nil {
		settings = in.Settings(sw.Store.Dir(), sw.Store.Workspace())
	}
	for _, n := range extswitch.WidenNotes(m, extension.ServerGrant(m).Union(p.W), p.Handed, p.Settings, a.getenv, settings) {
		fmt.Fprintf(a.Out, "Note: %s.\n    fix: %s\n", n.Message, n.Fix)
	}
}

// agentServerWords name the agents' servers, agent/server.
func agentServerWords(agents []extension.AgentServer) string {
	var out []string
	for _, s := range agents {
		if extension.SandboxedServer(s.Def) || extension.RemoteServer(s.Def) {
			out = append(out, extension.Printable(s.Agent+"/"+s.Server))
		}
	}
	return strings.Join(out, ", ")
}

// switchedHookLines say what the switch did with p's hooks.
func switchedHookLines(p *extswitch.Parts, off []string, path string) []string {
	var on, left []string
	for _, h := range p.Hooks {
		switch {
		case !h.Switchable():
			left = append(left, fmt.Sprintf("Its hook %s stays Gemini CLI's, which runs it unconfined with your rights: %s.", h.Label, h.Why))
		case !slices.Contains(off, h.Label):
			on = append(on, h.Label)
		}
	}
	var lines []string
	if len(on) > 0 {
		lines = append(lines, fmt.Sprintf("Its hooks %s run in gemkit's sandbox (%s): Gemini CLI no longer runs them itself (hooksConfig.disabled in %s), and a hook of gemkit's there runs each, on the same event and matcher, in folders Gemini CLI trusts (it runs the hooks of its settings files nowhere else).",
			strings.Join(on, ", "), extension.HookProfileWords, path))
	}
	for _, l := range off {
		lines = append(lines, fmt.Sprintf("Its hook %s stays off, as your hooksConfig.disabled had it; gemkit does not run it either.", l))
	}
	if p.HooksErr != "" {
		lines = append(lines, "Its hooks cannot be read ("+p.HooksErr+"): Gemini CLI loads none of them either.")
	}
	return append(lines, left...)
}

// notStarted says what Gemini CLI no longer does with m's servers once
// they are switched, by its settings file path.
func notStarted(m *extension.Manifest, path string) string {
	if m.AgentPlugin {
		return "Gemini CLI runs nothing of this Agent Plugins plugin"
	}
	words := "Gemini CLI no longer starts " + extswitch.PrintableNames(extension.SandboxedServers(m))
	if remote := extension.RemoteServers(m); len(remote) > 0 {
		words += " nor connects to " + extswitch.PrintableNames(remote)
	}
	return words + " (mcp.excluded in " + path + ")"
}

// servedWords say, after what Gemini CLI no longer does, how gemkit mcp
// serves m's switched servers: the stdio ones it listed in its sandbox
// (served, each with its tools), the remote ones connected to as Gemini
// CLI would, not sandboxed; "" when neither.
func servedWords(m *extension.Manifest, served []string) string {
	var parts []string
	if len(served) > 0 {
		parts = append(parts, "serves "+extswitch.JoinAnd(served)+" in its sandbox, listed now")
	}
	if remote := extension.RemoteServers(m); len(remote) > 0 {
		parts = append(parts, "connects to "+extswitch.PrintableNames(remote)+" itself as Gemini CLI did (a remote server runs elsewhere: it is not sandboxed)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; gemkit mcp " + strings.Join(parts, ", and ")
}

// servedLines say, of the servers the switch listed (checks), which
// gemkit mcp serves, with their tools, and which it does not, each with
// why and what to do; served are the labels it serves.
func servedLines(name string, checks []extswitch.ServedCheck) (served []string, lines []string) {
	for _, c := range checks {
		if c.Err == nil {
			served = append(served, fmt.Sprintf("%s (%d tool%s)", extension.Printable(c.Label), c.Tools, extswitch.Plural(c.Tools)))
			continue
		}
		lines = append(lines, fmt.Sprintf("NOT SERVED: gemkit mcp could not serve %s, and Gemini CLI no longer starts it: %s. Fix what it says, then run `gemkit extensions sandbox %s` again, which lists it again; or give it back to Gemini CLI: `gemkit extensions sandbox %s --off`",
			extension.Printable(c.Label), strings.TrimSuffix(extension.PrintableText(c.Err.Error()), "."), extension.Printable(name), extension.Printable(name)))
	}
	return served, lines
}
