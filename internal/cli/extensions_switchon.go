package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/progsearch"
)

// The switch itself (gemkit extensions sandbox NAME): an extension's
// stdio and remote servers, its agents' servers and its command hooks
// taken from Gemini CLI into gemkit's sandbox, once the person agrees to
// what they may do there, and the words that say what it did. The
// command's flags are in extensions_sandbox.go, the way back in
// extensions_switchoff.go.

// switchOn switches ext's servers, its agents' servers and its command
// hooks to gemkit with the widening o asks for, after the person agrees
// (the consent record then holds the new terms). Its steps: what there
// is to switch, the widening asked for, the checks against Gemini CLI's
// settings, the packages pinned, what would keep gemkit mcp from serving,
// the person's agreement, the switch itself, and the words that say what
// it did.
func switchOn(ctx context.Context, a *app, st *extension.Store, in *extension.Installed, o sandboxFlags, command string) error {
	ext := in.Extension
	r := &switchOnRun{a: a, st: st, ext: ext, in: in, o: o, command: command}
	parts, err := partsOf(a, st, ext)
	if err != nil {
		return err
	}
	r.parts = parts
	if len(parts.Unreadable) > 0 {
		return holdUnreadable(a, st, ext, parts.Unreadable)
	}
	if done, err := r.nothingToSwitch(ctx); done {
		return err
	}
	if r.old, err = st.ServerChoice(ext.Manifest.Name); err != nil {
		return err
	}
	if err := r.widening(); err != nil {
		return err
	}
	if err := r.credentials(); err != nil {
		return err
	}
	if err := r.checkSettings(); err != nil {
		return err
	}
	// The packages its package-runner servers fetch are pinned before
	// anything is agreed to: the consent text names them.
	if r.plan, err = resolvePackages(ctx, a, st, ext, r.old, r.scripts, false); err != nil {
		return fmt.Errorf("not switched: %w", err)
	}
	defer r.plan.release(a, st, ext.Manifest.Name)
	if err := r.checkServable(); err != nil {
		return err
	}
	if err := r.agree(ctx); err != nil {
		return err
	}
	off, err := r.switchAndRecord(ctx)
	if err != nil {
		return err
	}
	// Listed as switched: the extension as it is now (its links made
	// relative again, its hold released).
	var checks []servedCheck
	if in, err := st.Get(ext.Manifest.Name); err == nil && in.Extension != nil {
		checks = listSwitched(ctx, a, st, in)
	}
	r.tellSwitched(off, checks)
	return nil
}

// switchOnRun is one switch on (switchOn): what it switches and what the
// person asked, then what each step finds for the next.
type switchOnRun struct {
	a   *app
	st  *extension.Store
	ext *extension.Extension
	// in is ext as installed: gemkit mcp serves nothing of one it does
	// not load (notLoaded).
	in      *extension.Installed
	o       sandboxFlags
	command string
	parts   *switchParts
	// old is the extension's choice before the switch; w and hw are the
	// servers' and the hooks' widenings after it, scripts whether its
	// packages' install scripts run.
	old     extension.ServerChoice
	w       extension.Widening
	hw      map[string]extension.Widening
	scripts bool
	// path is Gemini CLI's settings file, gs what it holds.
	path  string
	gs    geminisettings.Settings
	plan  *packagePlan
	state extension.ConsentState
	// handed are the credentials files the servers are to be handed, as
	// found now at their kinds' own places (credentials).
	handed []permission.HandedFile
	// links are the links a copy of the extension made absolute, which
	// the switch makes relative again.
	links []extension.CopiedLink
	// held: the switch left it held in Gemini CLI for its policies
	// (keepPolicyHold), as it said.
	held bool
}

// agentLocal reports whether one of the extension's agents has a server
// gemkit runs in its sandbox.
func (r *switchOnRun) agentLocal() bool {
	return slices.ContainsFunc(r.parts.Agents, func(s extension.AgentServer) bool { return extension.SandboxedServer(s.Def) })
}

// nothingToSwitch handles an extension with no stdio server, agent
// server or command hook gemkit can run: its remote servers alone are
// widened (widenRemote) when that is all the flags ask, else the switch
// is refused in words. done is false when there is something to switch.
func (r *switchOnRun) nothingToSwitch(ctx context.Context) (done bool, err error) {
	m, o := r.ext.Manifest, r.o
	hooks := slices.ContainsFunc(r.parts.Hooks, switchHook.switchable)
	if len(extension.SandboxedServers(m)) > 0 || r.agentLocal() || hooks {
		return false, nil
	}
	if len(extension.RemoteServers(m)) > 0 && o.hook == "" && (len(o.hosts) > 0 || o.defaultProfile) && o.write == "" && !o.unixSockets && len(o.credentials) == 0 && len(o.env) == 0 && o.dataLimit == "" && !o.installScripts {
		return true, widenRemote(ctx, r.a, r.st, r.ext, o, r.command)
	}
	why := "gemkit runs stdio servers, those with a command, of its manifest and its agents, and its command hooks, and takes an extension's remote servers along only with them: alone, they stay Gemini CLI's; gemkit itself stays as it is"
	if cs := extension.ContainerServers(m); len(cs) > 0 {
		why = strings.Join(cs, ", ") + ": " + extension.ContainerWords(extension.ContainerCommand(m.MCPServers[cs[0]]))
	}
	if len(r.parts.Hooks) > 0 {
		why += "; its hooks cannot be taken from Gemini CLI: " + hookWhys(r.parts.Hooks)
	}
	return true, withExitCode(ExitNo, fmt.Errorf("%s has no MCP server gemkit can run in its sandbox (%s)", extension.Printable(m.Name), why))
}

// widening computes the servers' and hooks' widenings the flags ask for
// on top of the old ones (--hook widens that hook alone;
// --default-profile starts again from nothing), and whether install
// scripts run.
func (r *switchOnRun) widening() error {
	o := r.o
	r.w, r.hw = r.old.Widening, maps.Clone(r.old.HookWidening)
	if o.hook != "" {
		if !slices.ContainsFunc(r.parts.Hooks, func(h switchHook) bool { return h.Label == o.hook }) {
			return withExitCode(ExitError, fmt.Errorf("--hook %s: %s has no command hook of that name; its hooks are %s", extension.Printable(o.hook), extension.Printable(r.ext.Manifest.Name), hookLabels(r.parts.Hooks)))
		}
		if r.hw == nil {
			r.hw = map[string]extension.Widening{}
		}
		hookW := r.hw[o.hook]
		if o.defaultProfile {
			hookW = extension.Widening{}
		}
		if err := widen(&hookW, o); err != nil {
			return err
		}
		if hookW.Empty() {
			delete(r.hw, o.hook)
		} else {
			r.hw[o.hook] = hookW
		}
	} else {
		if o.defaultProfile {
			r.w = extension.Widening{}
		}
		if err := widen(&r.w, o); err != nil {
			return err
		}
	}
	// Install scripts are a widening of the servers' installs:
	// --default-profile of the servers takes them back.
	r.scripts = r.old.InstallScripts && !(o.defaultProfile && o.hook == "") || o.installScripts
	return nil
}

// credentials finds the files of the kinds of credentials the servers
// are to be handed (the manifest's grant and the widening's), for the
// person to agree to as they are now: each at its kind's own place in
// their home, never where a variable points. A file that is not the
// kind's, or a variable of this environment naming another, refuses
// the switch in words; a kind with none is handed nothing (a note says
// so after the switch).
func (r *switchOnRun) credentials() error {
	r.handed = nil
	for _, k := range extension.ServerGrant(r.ext.Manifest).Union(r.w).Credentials {
		files, err := permission.HandCredentials(k, r.a.getenv("HOME"), r.a.getenv)
		var none *permission.NoCredentialsError
		if errors.As(err, &none) {
			continue
		}
		if err != nil {
			return withExitCode(ExitNo, fmt.Errorf("not switched: %w; then run `%s` again", err, r.command))
		}
		r.handed = append(r.handed, files...)
	}
	return nil
}

// checkSettings reads Gemini CLI's settings and refuses a switch whose
// exclusions there would stop what is not the extension's: a server of
// the person's of the same name, a hook of the same name or command, or
// gemkit mcp's own entry under a name the extension uses.
func (r *switchOnRun) checkSettings() error {
	m, name := r.ext.Manifest, r.ext.Manifest.Name
	r.path = geminiSettingsPath(r.st)
	var err error
	if r.gs, err = geminisettings.Read(r.path); err != nil {
		return err
	}
	if n := gemkitNameTaken(m, r.gs); n != "" {
		return withExitCode(ExitNo, fmt.Errorf("not switched: %s: %s", extension.Printable(name), gemkitNameWords(name, n)))
	}
	if clash := sharedNames(r.parts.Names, r.gs.Servers); len(clash) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: Gemini CLI's mcp.excluded names servers, not extensions, and your own mcpServers in %s has %s, which excluding %s's servers of the same name would stop too; rename yours first", r.path, strings.Join(clash, ", "), extension.Printable(name)))
	}
	sw, err := r.st.Switches()
	if err != nil {
		return err
	}
	if clash := hookClashes(r.st, name, r.parts, r.gs, sw); len(clash) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: Gemini CLI's hooksConfig.disabled names hooks by their name, or their command when they have none, whoever they are from; %s. Nothing was changed; rename yours, or switch the other extension too", strings.Join(clash, "; ")))
	}
	return nil
}

// checkServable reads the consent state of the extension as it is and
// says now what would keep gemkit mcp from serving a server, switching
// nothing: the servers stay Gemini CLI's rather than vanish from it. The
// links a copy made absolute are what the switch itself repairs.
func (r *switchOnRun) checkServable() error {
	var err error
	if r.state, err = r.st.Consent(r.ext); err != nil {
		return err
	}
	r.links = extmcp.CopiedLinks(r.st, r.ext, r.state)
	var cannot []string
	if w := notLoaded(r.in); w != "" {
		cannot = append(cannot, w)
	}
	if err := extension.WithoutCopied(r.state.Unbound, r.links); err != nil {
		cannot = append(cannot, err.Error())
	}
	// A package-runner line that cannot be pinned, or that fetches from
	// PyPI, is never started by gemkit mcp: switched, nothing would
	// start it. Its program is not looked for, which would not help.
	never := map[string]bool{}
	var unpinned []string
	for _, rs := range r.plan.unpinnable {
		unpinned = append(unpinned, cannotPin(r.ext.Manifest.Name, rs).Message)
		never[rs.name] = true
	}
	var missing []string // the programs not found, which the person installs
	notFound := 0        // the servers whose program was not found
	for _, s := range extension.SandboxedServers(r.ext.Manifest) {
		if never[s] {
			continue
		}
		// Checked for no workspace in particular (the extension's own
		// folder stands for one): gemkit mcp runs wherever its client
		// starts it.
		if err := extmcp.Check(r.ext, s, r.w, r.handed, r.plan.pins, r.ext.Dir, r.a.environ()); err != nil {
			cannot = append(cannot, fmt.Sprintf("its MCP server %s would not start: %v", extension.Printable(s), err))
			var nf *progsearch.NotFoundError
			if errors.As(err, &nf) {
				notFound++
				if p := extension.Printable(nf.Program); !slices.Contains(missing, p) {
					missing = append(missing, p)
				}
			}
		}
	}
	cannot = append(cannot, unpinned...)
	if len(cannot) == 0 {
		return nil
	}
	for i, c := range cannot {
		cannot[i] = sentence(c)
	}
	next := nextStep(missing, len(cannot) > notFound, r.command)
	if len(unpinned) == len(cannot) {
		// Nothing the person can do here: the lines are the author's.
		next = "Those command lines are the extension author's to change (to npx -y PACKAGE, which gemkit pins); until then its servers stay Gemini CLI's."
	}
	return withExitCode(ExitNo, fmt.Errorf("not switched: gemkit mcp could not serve %s's MCP servers, so Gemini CLI goes on starting them itself, as before. %s. %s",
		extension.Printable(r.ext.Manifest.Name), strings.Join(cannot, ". "), next))
}

// nextStep says what the person does after a refused switch: install
// the programs missing (or put them on PATH), deal with what else was
// said (rest), then run command again.
func nextStep(missing []string, rest bool, command string) string {
	if len(missing) == 0 {
		return "Once that is fixed, run `" + command + "` again."
	}
	it := "them"
	if len(missing) == 1 {
		it = "it"
	}
	s := "Install " + joinAnd(missing) + ", or put " + it + " on PATH"
	if rest {
		return s + ", and deal with what else is said above; then run `" + command + "` again."
	}
	return s + ", then run `" + command + "` again."
}

// joinAnd is list in words: "a", "a and b", "a, b and c".
func joinAnd(list []string) string {
	if len(list) < 2 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

// sentence is s begun with a capital letter, as a sentence of its own.
func sentence(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// agree shows what the switch gives the servers and hooks (what changed
// since the person agreed first) and asks the person to agree when it is
// more than they had, then repairs the copied links.
func (r *switchOnRun) agree(ctx context.Context) error {
	a, name, old := r.a, r.ext.Manifest.Name, r.old
	next := old
	next.Switched, next.Widening, next.HookWidening = true, r.w, r.hw
	next.Packages, next.InstallScripts, next.Handed = r.plan.pins, r.scripts, r.handed
	next.Hooks = nil
	for _, h := range r.parts.Hooks {
		if h.switchable() {
			next.Hooks = append(next.Hooks, extension.SwitchedHook{Label: h.Label, Event: h.Event, Key: h.Key, Command: h.Def.Command})
		}
	}
	if r.state.Notice != "" {
		// What changed since the person agreed, before what they agree to.
		fmt.Fprintln(a.Out, extension.Printable(r.state.Notice))
	}
	if len(r.links) > 0 {
		fmt.Fprintln(a.Out, extension.CopiedLinksWords(r.links)+" The switch makes them so once you agree.")
	}
	for _, l := range extension.ConsentTextWith(r.ext, "Switching to gemkit's sandbox:", next) {
		fmt.Fprintln(a.Out, l)
	}
	writePackageLines(a, r.plan)
	// Switching alone narrows what the servers and hooks can do;
	// agreeing is asked for when there is no consent to the extension as
	// it is now, or when they get more than they had, other packages
	// among it, or when links are repaired.
	if !r.state.Granted || widens(old.Widening, r.w) || hooksWiden(old.HookWidening, r.hw) || r.plan.changed || r.scripts && !old.InstallScripts || len(r.links) > 0 ||
		!slices.Equal(old.Handed, r.handed) {
		a.readBeforeAgreeing(a.Out)
		if ok, err := a.personConfirms(ctx, name, "`"+r.command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}
	if len(r.links) > 0 {
		var err error
		if r.state, err = relinked(r.st, r.ext, r.links); err != nil {
			return withExitCode(ExitNo, fmt.Errorf("not switched: %w", err))
		}
		fmt.Fprintf(a.Out, "Made %d link%s relative again.\n", len(r.links), plural(len(r.links)))
	}
	return nil
}

// switchAndRecord switches (Gemini CLI's exclusions and gemkit's choice),
// records the consent the person gave and releases the hold on the
// extension's servers; off are the hooks the person's settings keep off.
func (r *switchOnRun) switchAndRecord(ctx context.Context) (off []string, err error) {
	name := r.ext.Manifest.Name
	res, err := syncSwitch(r.st, name, r.parts, func(c *extension.ServerChoice) {
		c.Widening, c.HookWidening = r.w, r.hw
		c.Packages, c.InstallScripts, c.Handed = r.plan.pins, r.scripts, r.handed
	})
	if err != nil {
		return nil, err
	}
	if err := r.st.RecordConsentContent(name, r.state.Hash, r.state.Content); err != nil {
		return nil, fmt.Errorf("switched, but your consent was not recorded, so gemkit serves and runs nothing of %s until it is (%w); %s", extension.Printable(name), err, consentHint(name))
	}
	keepAgreed(ctx, r.a, r.st, r.ext)
	if err := releaseHold(r.a, r.st, name); err != nil {
		return nil, err
	}
	if in, err := r.st.Get(name); err == nil {
		holds, _ := r.st.Holds()
		r.held = holds[in.Name].Fix != ""
	}
	return res.Off, nil
}

// tellSwitched says what the switch did: what Gemini CLI no longer
// starts and who serves it now, the agents' servers and the hooks, what
// stays Gemini CLI's, then the widenings and how to take them back.
func (r *switchOnRun) tellSwitched(off []string, checks []servedCheck) {
	m, name, parts := r.ext.Manifest, r.ext.Manifest.Name, r.parts
	// What the manifest named is escaped where it is put in words; the
	// writer escapes what a word missed (a hook's reason quoting its
	// command).
	out := printableWriter{r.a.Out}
	local := extension.SandboxedServers(m)
	if r.held {
		fmt.Fprintf(out, "\nNot switched whole: gemkit holds %s in Gemini CLI, as said above, and Gemini CLI runs none of it. What the switch took:\n", extension.Printable(name))
	}
	served, notServed := servedLines(name, checks)
	if len(local) > 0 {
		fmt.Fprintf(out, "\nSwitched: %s (mcp.excluded in %s)%s. Consent recorded to %s as it is now.\n",
			notStarted(m), r.path, servedWords(m, served), extension.Printable(name))
	} else {
		fmt.Fprintf(out, "\nSwitched %s to gemkit. Consent recorded to it as it is now.\n", extension.Printable(name))
	}
	for _, l := range notServed {
		fmt.Fprintln(out, l)
	}
	if words := agentServerWords(parts.Agents); words != "" {
		fmt.Fprintf(out, "Its agents' MCP servers %s: Gemini CLI no longer starts them when the agent runs (mcp.excluded); gemkit mcp serves them in its sandbox to the main agent, and an agent that lists no tools of its own gets them from there.\n", words)
	}
	for _, l := range switchedHookLines(parts, off, r.path) {
		fmt.Fprintln(out, l)
	}
	for _, c := range extension.ContainerServers(m) {
		fmt.Fprintf(out, "Not switched: %s, %s.\n", extension.Printable(c), extension.ContainerWords(extension.ContainerCommand(m.MCPServers[c])))
	}
	for _, n := range parts.Names {
		if others, first := othersWith(r.st, name, n); len(others) > 0 {
			fmt.Fprintf(out, "The server name %s is also the extensions' %s: Gemini CLI keys servers by name and starts only %s's of those not switched; gemkit mcp serves each switched one's, apart. mcp.excluded keeps %s while any switched extension needs it.\n",
				extension.Printable(n), printableNames(others), extension.Printable(first), extension.Printable(n))
		}
	}
	if len(local) > 0 || r.agentLocal() {
		if r.gs.Gemkit == "" {
			fmt.Fprintln(out, "Gemini CLI reaches them through gemkit mcp; add it once: gemini mcp add -s user --trust gemkit gemkit mcp")
		}
	}
	r.tellWidened()
	// The clients hide most of a failed call (Gemini CLI 0.61 shows none
	// of its text), so the person is told where the refusals are said.
	fmt.Fprintf(out, "What the sandbox refuses %s: gemkit extensions doctor, with the command that allows each.\n", them(len(local)+len(parts.Hooks)))
	fmt.Fprintf(out, "Undo: gemkit extensions sandbox %s --off\n", extension.Printable(name))
}

// tellWidened says what the servers and hooks may now do beyond their
// profile, and how to take it back: the consent text says it inside each
// server's line, where a widening just given is easy to miss. Then the
// notes on what the widening will not do.
func (r *switchOnRun) tellWidened() {
	a, o, m, name := r.a, r.o, r.ext.Manifest, extension.Printable(r.ext.Manifest.Name)
	switch {
	case o.hook != "" && !r.hw[o.hook].Empty():
		fmt.Fprintf(a.Out, "Allowed the hook %s beyond the hook profile: %s. Back to it: gemkit extensions sandbox %s --hook %s --default-profile\n", o.hook, r.hw[o.hook].Words(), name, o.hook)
	case o.hook != "" && !r.old.HookWidening[o.hook].Empty():
		fmt.Fprintf(a.Out, "The hook %s is back to the hook profile: nothing allowed beyond it.\n", o.hook)
	case o.hook != "":
	case !r.w.Empty():
		fmt.Fprintf(a.Out, "Allowed beyond the default profile: %s. Back to it: gemkit extensions sandbox %s --default-profile\n", r.w.Words(), name)
	case !r.old.Widening.Empty():
		fmt.Fprintln(a.Out, "Back to the default profile: nothing allowed beyond it.")
	}
	if r.scripts && len(r.plan.pins) > 0 {
		fmt.Fprintf(a.Out, "Install scripts of its servers' packages: allowed, run after npm fetched the packages, in a sandbox with no network and none of your npm configuration. Back to off: gemkit extensions sandbox %s --default-profile\n", name)
	}
	var settings []extension.SettingState
	if in, err := r.st.Get(m.Name); err == nil {
		settings = in.Settings(r.st.Dir(), r.st.Workspace())
	}
	for _, n := range widenNotes(m, extension.ServerGrant(m).Union(r.w), r.handed, r.gs, a.getenv, settings) {
		fmt.Fprintf(a.Out, "Note: %s.\n    fix: %s\n", n.Message, n.Fix)
	}
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
			out = append(out, extension.Printable(s.Agent+"/"+s.Server))
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
	words := "Gemini CLI no longer starts " + printableNames(extension.SandboxedServers(m))
	if remote := extension.RemoteServers(m); len(remote) > 0 {
		words += " nor connects to " + printableNames(remote)
	}
	return words
}

// servedWords say, after what Gemini CLI no longer does, how gemkit mcp
// serves m's switched servers: the stdio ones it listed in its sandbox
// (served, each with its tools), the remote ones connected to as Gemini
// CLI would, not sandboxed; "" when neither.
func servedWords(m *extension.Manifest, served []string) string {
	var parts []string
	if len(served) > 0 {
		parts = append(parts, "serves "+joinAnd(served)+" in its sandbox, listed now")
	}
	if remote := extension.RemoteServers(m); len(remote) > 0 {
		parts = append(parts, "connects to "+printableNames(remote)+" itself as Gemini CLI did (a remote server runs elsewhere: it is not sandboxed)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; gemkit mcp " + strings.Join(parts, ", and ")
}
