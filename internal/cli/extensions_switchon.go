package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// The switch itself (gemkit extensions sandbox NAME): an extension's
// stdio and remote servers, its agents' servers and its command hooks
// taken from Gemini CLI into gemkit's sandbox, once the person agrees to
// what they may do there, and the words that say what it did. The
// command's flags are in extensions_sandbox.go, the way back in
// extensions_switchoff.go.

// switchOn switches ext's servers, its agents' servers and its command
// hooks to gemkit with the widening o asks for, after the person agrees
// (the consent record then holds the new terms).
func switchOn(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, o sandboxFlags, command string) error {
	m := ext.Manifest
	name := m.Name
	parts, err := partsOf(a, st, ext)
	if err != nil {
		return err
	}
	hooks := slices.ContainsFunc(parts.Hooks, switchHook.switchable)
	agentLocal := slices.ContainsFunc(parts.Agents, func(s extension.AgentServer) bool { return extension.SandboxedServer(s.Def) })
	if len(extension.SandboxedServers(m)) == 0 && !agentLocal && !hooks {
		if len(extension.RemoteServers(m)) > 0 && o.hook == "" && (len(o.hosts) > 0 || o.defaultProfile) && o.write == "" && !o.unixSockets && len(o.credentials) == 0 && len(o.env) == 0 && o.dataLimit == "" && !o.installScripts {
			return widenRemote(ctx, a, st, ext, o, command)
		}
		why := "gemkit runs stdio servers, those with a command, of its manifest and its agents, and its command hooks, and takes an extension's remote servers along only with them: alone, they stay Gemini CLI's; gemkit itself stays as it is"
		if cs := extension.ContainerServers(m); len(cs) > 0 {
			why = strings.Join(cs, ", ") + ": " + extension.ContainerWords(extension.ContainerCommand(m.MCPServers[cs[0]]))
		}
		if len(parts.Hooks) > 0 {
			why += "; its hooks cannot be taken from Gemini CLI: " + hookWhys(parts.Hooks)
		}
		return withExitCode(ExitNo, fmt.Errorf("%s has no MCP server gemkit can run in its sandbox (%s)", extension.Printable(name), why))
	}
	old, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	w, hw := old.Widening, maps.Clone(old.HookWidening)
	target := &w
	if o.hook != "" {
		if !slices.ContainsFunc(parts.Hooks, func(h switchHook) bool { return h.Label == o.hook }) {
			return withExitCode(ExitError, fmt.Errorf("--hook %s: %s has no command hook of that name; its hooks are %s", extension.Printable(o.hook), extension.Printable(name), hookLabels(parts.Hooks)))
		}
		if hw == nil {
			hw = map[string]extension.Widening{}
		}
		hookW := hw[o.hook]
		target = &hookW
		if o.defaultProfile {
			hookW = extension.Widening{}
		}
		if err := widen(target, o); err != nil {
			return err
		}
		if hookW.Empty() {
			delete(hw, o.hook)
		} else {
			hw[o.hook] = hookW
		}
	} else {
		if o.defaultProfile {
			w = extension.Widening{}
		}
		if err := widen(target, o); err != nil {
			return err
		}
	}
	// Install scripts are a widening of the servers' installs:
	// --default-profile of the servers takes them back.
	scripts := old.InstallScripts && !(o.defaultProfile && o.hook == "") || o.installScripts
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	if n := gemkitNameTaken(m, gs); n != "" {
		return withExitCode(ExitNo, fmt.Errorf("not switched: %s: %s", extension.Printable(name), gemkitNameWords(name, n)))
	}
	if clash := sharedNames(parts.Names, gs.Servers); len(clash) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: Gemini CLI's mcp.excluded names servers, not extensions, and your own mcpServers in %s has %s, which excluding %s's servers of the same name would stop too; rename yours first", path, strings.Join(clash, ", "), extension.Printable(name)))
	}
	sw, err := st.Switches()
	if err != nil {
		return err
	}
	if clash := hookClashes(st, name, parts, gs, sw); len(clash) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: Gemini CLI's hooksConfig.disabled names hooks by their name, or their command when they have none, whoever they are from; %s. Nothing was changed; rename yours, or switch the other extension too", strings.Join(clash, "; ")))
	}

	// The packages its package-runner servers fetch are pinned before
	// anything is agreed to: the consent text names them.
	plan, err := resolvePackages(ctx, a, st, ext, old, scripts, false)
	if err != nil {
		return fmt.Errorf("not switched: %w", err)
	}
	defer plan.release(a, st, name)

	next := old
	next.Switched, next.Widening, next.HookWidening = true, w, hw
	next.Packages, next.InstallScripts = plan.pins, scripts
	next.Hooks = nil
	for _, h := range parts.Hooks {
		if h.switchable() {
			next.Hooks = append(next.Hooks, extension.SwitchedHook{Label: h.Label, Event: h.Event, Key: h.Key, Command: h.Def.Command})
		}
	}
	state, err := st.Consent(ext)
	if err != nil {
		return err
	}
	// What would keep gemkit mcp from serving a server is said now, and
	// nothing is switched: the servers stay Gemini CLI's rather than
	// vanish from it. The links a copy made absolute are what the
	// switch itself repairs.
	links := extmcp.CopiedLinks(st, ext, state)
	var cannot []string
	if err := extension.WithoutCopied(state.Unbound, links); err != nil {
		cannot = append(cannot, err.Error())
	}
	for _, s := range extension.SandboxedServers(m) {
		// Checked for no workspace in particular (the extension's own
		// folder stands for one): gemkit mcp runs wherever its client
		// starts it.
		if err := extmcp.Check(ext, s, w, ext.Dir, a.environ()); err != nil {
			cannot = append(cannot, fmt.Sprintf("its MCP server %s would not start: %v", extension.Printable(s), err))
		}
	}
	if len(cannot) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: gemkit mcp could not serve %s's MCP servers, so Gemini CLI goes on starting them itself, as before. %s", extension.Printable(name), strings.Join(cannot, ". ")))
	}
	if state.Notice != "" {
		// What changed since the person agreed, before what they agree to.
		fmt.Fprintln(a.Out, extension.Printable(state.Notice))
	}
	if len(links) > 0 {
		fmt.Fprintln(a.Out, extension.CopiedLinksWords(links)+" The switch makes them so once you agree.")
	}
	for _, l := range extension.ConsentTextWith(ext, "Switching to gemkit's sandbox:", next) {
		fmt.Fprintln(a.Out, l)
	}
	writePackageLines(a, plan)
	// Switching alone narrows what the servers and hooks can do;
	// agreeing is asked for when there is no consent to the extension as
	// it is now, or when they get more than they had, other packages
	// among it, or when links are repaired.
	if !state.Granted || widens(old.Widening, w) || hooksWiden(old.HookWidening, hw) || plan.changed || scripts && !old.InstallScripts || len(links) > 0 {
		if ok, err := a.personConfirms(ctx, name, "`"+command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}
	if len(links) > 0 {
		if state, err = relinked(st, ext, links); err != nil {
			return withExitCode(ExitNo, fmt.Errorf("not switched: %w", err))
		}
		fmt.Fprintf(a.Out, "Made %d link%s relative again.\n", len(links), plural(len(links)))
	}

	res, err := syncSwitch(st, name, parts, func(c *extension.ServerChoice) {
		c.Widening, c.HookWidening = w, hw
		c.Packages, c.InstallScripts = plan.pins, scripts
	})
	if err != nil {
		return err
	}
	if err := st.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return fmt.Errorf("switched, but your consent was not recorded, so gemkit serves and runs nothing of %s until it is (%w); %s", extension.Printable(name), err, consentHint(name))
	}
	if err := releaseHold(a, st, name); err != nil {
		return err
	}
	local := extension.SandboxedServers(m)
	if len(local) > 0 {
		fmt.Fprintf(a.Out, "\nSwitched: %s (mcp.excluded in %s); %s. Consent recorded to %s as it is now.\n",
			notStarted(m), path, servedWords(m), extension.Printable(name))
	} else {
		fmt.Fprintf(a.Out, "\nSwitched %s to gemkit. Consent recorded to it as it is now.\n", extension.Printable(name))
	}
	if words := agentServerWords(parts.Agents); words != "" {
		fmt.Fprintf(a.Out, "Its agents' MCP servers %s: Gemini CLI no longer starts them when the agent runs (mcp.excluded); gemkit mcp serves them in its sandbox to the main agent, and an agent that lists no tools of its own gets them from there.\n", words)
	}
	for _, l := range switchedHookLines(parts, res.Off, path) {
		fmt.Fprintln(a.Out, l)
	}
	for _, c := range extension.ContainerServers(m) {
		fmt.Fprintf(a.Out, "Not switched: %s, %s.\n", c, extension.ContainerWords(extension.ContainerCommand(m.MCPServers[c])))
	}
	for _, n := range parts.Names {
		if others, first := othersWith(st, name, n); len(others) > 0 {
			fmt.Fprintf(a.Out, "The server name %s is also the extensions' %s: Gemini CLI keys servers by name and starts only %s's of those not switched; gemkit mcp serves each switched one's, apart. mcp.excluded keeps %s while any switched extension needs it.\n",
				n, strings.Join(others, ", "), first, n)
		}
	}
	if len(local) > 0 || agentLocal {
		if gs.Gemkit == "" {
			fmt.Fprintln(a.Out, "Gemini CLI reaches them through gemkit mcp; add it once: gemini mcp add -s user --trust gemkit gemkit mcp")
		}
	}
	// What the servers may now do beyond the default profile, and how to
	// take it back: the consent text above says it inside each server's
	// line, where a widening just given is easy to miss.
	switch {
	case o.hook != "" && !hw[o.hook].Empty():
		fmt.Fprintf(a.Out, "Allowed the hook %s beyond the hook profile: %s. Back to it: gemkit extensions sandbox %s --hook %s --default-profile\n", o.hook, hw[o.hook].Words(), extension.Printable(name), o.hook)
	case o.hook != "" && !old.HookWidening[o.hook].Empty():
		fmt.Fprintf(a.Out, "The hook %s is back to the hook profile: nothing allowed beyond it.\n", o.hook)
	case o.hook != "":
	case !w.Empty():
		fmt.Fprintf(a.Out, "Allowed beyond the default profile: %s. Back to it: gemkit extensions sandbox %s --default-profile\n", w.Words(), extension.Printable(name))
	case !old.Widening.Empty():
		fmt.Fprintln(a.Out, "Back to the default profile: nothing allowed beyond it.")
	}
	if scripts && len(plan.pins) > 0 {
		fmt.Fprintf(a.Out, "Install scripts of its servers' packages: allowed, in the install's sandbox (no network but the registry). Back to off: gemkit extensions sandbox %s --default-profile\n", extension.Printable(name))
	}
	for _, n := range widenNotes(m, extension.ServerGrant(m).Union(w), gs, a.getenv) {
		fmt.Fprintf(a.Out, "Note: %s.\n    fix: %s\n", n.Message, n.Fix)
	}
	// The clients hide most of a failed call (Gemini CLI 0.61 shows none
	// of its text), so the person is told where the refusals are said.
	fmt.Fprintf(a.Out, "What the sandbox refuses %s: gemkit extensions doctor, with the command that allows each.\n", them(len(local)+len(parts.Hooks)))
	fmt.Fprintf(a.Out, "Undo: gemkit extensions sandbox %s --off\n", extension.Printable(name))
	return nil
}

// hooksWiden reports whether to gives a hook more than from did.
func hooksWiden(from, to map[string]extension.Widening) bool {
	for label, w := range to {
		if widens(from[label], w) {
			return true
		}
	}
	return false
}

// hookLabels are the labels of hooks, for words.
func hookLabels(hooks []switchHook) string {
	if len(hooks) == 0 {
		return "none"
	}
	var out []string
	for _, h := range hooks {
		out = append(out, h.Label)
	}
	return strings.Join(out, ", ")
}

// hookWhys say why each hook the switch cannot take stays Gemini CLI's.
func hookWhys(hooks []switchHook) string {
	var out []string
	for _, h := range hooks {
		if !h.switchable() {
			out = append(out, h.Label+": "+h.Why)
		}
	}
	return strings.Join(out, "; ")
}

// agentServerWords name the agents' servers, agent/server.
func agentServerWords(agents []extension.AgentServer) string {
	var out []string
	for _, s := range agents {
		if extension.SandboxedServer(s.Def) || extension.RemoteServer(s.Def) {
			out = append(out, s.Agent+"/"+s.Server)
		}
	}
	return strings.Join(out, ", ")
}

// switchedHookLines say what the switch did with p's hooks.
func switchedHookLines(p *switchParts, off []string, path string) []string {
	var on, left []string
	for _, h := range p.Hooks {
		switch {
		case !h.switchable():
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
// they are switched.
func notStarted(m *extension.Manifest) string {
	words := "Gemini CLI no longer starts " + strings.Join(extension.SandboxedServers(m), ", ")
	if remote := extension.RemoteServers(m); len(remote) > 0 {
		words += " nor connects to " + strings.Join(remote, ", ")
	}
	return words
}

// servedWords say how gemkit mcp serves m's switched servers: the stdio
// ones in its sandbox, the remote ones connected to as Gemini CLI would,
// not sandboxed.
func servedWords(m *extension.Manifest) string {
	local, remote := extension.SandboxedServers(m), extension.RemoteServers(m)
	words := "gemkit mcp serves " + them(len(local)) + " in its sandbox"
	if len(remote) > 0 {
		words = "gemkit mcp serves " + strings.Join(local, ", ") + " in its sandbox, and connects to " + strings.Join(remote, ", ") +
			" itself as Gemini CLI did (a remote server runs elsewhere: it is not sandboxed)"
	}
	return words
}
