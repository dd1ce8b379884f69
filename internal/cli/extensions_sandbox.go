package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
)

// sandboxFlags are the flags of `gemkit extensions sandbox`.
type sandboxFlags struct {
	// hook, when set, is the label of the hook the widening is for.
	hook           string
	off            bool
	hosts          []string
	write          string
	unixSockets    bool
	credentials    []string
	env            []string
	defaultProfile bool
	installScripts bool
	dataLimit      string
}

func newExtSandboxCmd(a *app) *cobra.Command {
	var o sandboxFlags
	cmd := &cobra.Command{
		Use:               "sandbox <name>",
		ValidArgsFunction: completeExtension,
		Short:             "Run an extension's MCP servers, its agents' servers and its hooks in gemkit's sandbox instead of unconfined in Gemini CLI",
		Long: `Switch an extension to gemkit: Gemini CLI stops starting its stdio MCP servers
(its mcpServers entries with a command) and its agents' servers (agents/*.md
mcp_servers) itself, with your rights and your whole environment, and
` + "`gemkit mcp`" + ` serves them in gemkit's sandbox. Its remote servers (url,
httpUrl) go with them: Gemini CLI stops connecting to them and gemkit mcp
connects instead, as Gemini CLI would; they run elsewhere, so they are not
sandboxed. Its command hooks (hooks/hooks.json) run in gemkit's sandbox: Gemini
CLI stops running each (hooksConfig.disabled) and runs a hook of gemkit's in
its place (gemkit extensions hook), on the same event and matcher. Gemini CLI
keeps the extension's context files, commands, agents and skills, and reaches
the servers' tools through gemkit mcp (gemini mcp add -s user --trust gemkit
gemkit mcp), as Claude Code, Codex, OpenCode and Qwen Code do.

In the sandbox each stdio server can ` + extension.SandboxedServerWords + `.
What the extension's manifest declares in its permissions (allowed hosts, a
write scope, credentials by kind) its servers take too. Each hook can
` + extension.HookProfileWords + `.
--allow-host, --allow-write, --allow-unix-sockets, --allow-credentials and
--allow-env widen that, by name, for the servers, or with --hook LABEL for
that one hook; each widening is recorded, shown by describe and agreed to with
the extension's consent. A variable passed with --allow-env comes from the
environment of the gemkit mcp that starts the server, which is what its client
gave it: Gemini CLI 0.61 leaves out of it every variable whose name holds TOKEN,
KEY, SECRET, AUTH, PASSWORD, CREDENTIAL and the like unless gemkit's entry in
its settings names it ("env": {"TFE_TOKEN": "$TFE_TOKEN"}).
What the servers keep in the extension's data folder is bounded (1 GiB): a
server that reaches the bound is stopped, and doctor says so; --data-limit
raises it, the same way.

A server started by a package runner (npx -y pkg, npm exec, pnpm dlx, bunx,
yarn dlx), which Gemini CLI lets fetch the package from the registry at each
start with your rights, is pinned: gemkit installs the package once, at an
exact version (the newest for a bare name or @latest, shown), in its sandbox
with no network but the registry of your npm configuration and install
scripts off (--allow-install-scripts lets them run there), and the server
runs from that tree with no registry access. The tree is part of your
consent; gemkit extensions update pins again and asks again.

The command shows what you agree to and records your consent to the extension
as it is now (its tools' permissions, its servers' and hooks' profiles and its
files): in a terminal running it is agreeing; in an agent's shell you type the
extension's name on the terminal (as consent --grant).

What it changes in Gemini CLI: mcp.excluded, hooksConfig.disabled and its own
hooks under hooks in ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json
when set), which Gemini CLI 0.61 honours for an extension's servers and hooks;
nothing else of that file changes, its comments included, and it is written
atomically. gemkit records which switched extensions need each name and hook it
writes there, and whether it was yours: --off (and uninstall, and update for
what a new version drops) removes only what no switched extension needs and
gemkit added, and gives the rest back to Gemini CLI. A hook name another hook
of yours, or of an extension not switched, also uses is refused.
docs/extensions.md has the details.`,
		Example: `  gemkit extensions new ./memory-ext mcp && gemkit extensions link ./memory-ext --consent
  gemkit extensions sandbox memory-ext
  gemkit extensions sandbox memory-ext --allow-host api.example.com --allow-write workspace
  gemkit extensions sandbox memory-ext --allow-unix-sockets  # as a browser server needs
  gemkit extensions sandbox memory-ext --allow-credentials gcloud  # your application default credentials
  gemkit extensions sandbox memory-ext --allow-env TFE_TOKEN       # one variable of yours, by name
  gemkit extensions sandbox memory-ext --data-limit 4GiB    # more than 1 GiB in its data folder
  gemkit extensions sandbox memory-ext --default-profile   # forget the widenings
  gemkit extensions sandbox memory-ext --off               # back to Gemini CLI, unconfined`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			if in.Extension == nil {
				return fmt.Errorf("extension %s cannot be read: %w", in.Name, in.Err)
			}
			if o.off {
				if len(o.hosts) > 0 || o.write != "" || o.unixSockets || len(o.credentials) > 0 || len(o.env) > 0 || o.defaultProfile || o.hook != "" || o.installScripts || o.dataLimit != "" {
					return errors.New("--off takes no --hook, --allow-host, --allow-write, --allow-unix-sockets, --allow-credentials, --allow-env, --allow-install-scripts, --data-limit or --default-profile: it gives the servers and hooks back to Gemini CLI, and their widening stays recorded for the next switch")
				}
				if err := switchOff(a, st, in.Extension.Manifest.Name, false); err != nil {
					return err
				}
				return releaseHoldOff(a, st, in)
			}
			return switchOn(cmd.Context(), a, st, in.Extension, o, o.command(in.Extension.Manifest.Name))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.off, "off", false, "give the servers back to Gemini CLI (unconfined): undo the switch")
	f.StringArrayVar(&o.hosts, "allow-host", nil, "let the servers connect to this host (as permissions.network.allowedHosts: api.example.com, *.example.com, localhost:8080), through the sandbox's proxy; repeatable")
	f.StringVar(&o.write, "allow-write", "", "what the servers may write besides their data folder: workspace, or none")
	f.BoolVar(&o.unixSockets, "allow-unix-sockets", false, "let the servers create Unix sockets, which reach only those inside the sandbox (a browser's own processes), never your services'")
	f.StringArrayVar(&o.credentials, "allow-credentials", nil, "hand the servers one kind of your credentials, read-only, where their libraries look for them in their HOME: "+strings.Join(permission.ServerCredentialKinds(), ", ")+"; repeatable")
	f.StringArrayVar(&o.env, "allow-env", nil, "pass the servers this variable of yours, by name, from the environment of the gemkit mcp that starts them (a $NAME in the manifest's env takes it too); repeatable")
	f.BoolVar(&o.defaultProfile, "default-profile", false, "forget every widening: back to the default profile")
	f.BoolVar(&o.installScripts, "allow-install-scripts", false, "let the install scripts of the packages its package-runner servers (npx, ...) run, in the install's sandbox (no network but the registry); they are off by default")
	f.StringVar(&o.hook, "hook", "", "widen (or, with --default-profile, narrow back) this hook (its label, as describe shows it) rather than the servers")
	f.StringVar(&o.dataLimit, "data-limit", "", "how much the servers may keep in the extension's data folder (default 1GiB): a server that reaches it is stopped and reported; e.g. 4GiB")
	return cmd
}

// command is the command line that asks for o, for a person to run in
// a terminal of their own.
func (o sandboxFlags) command(name string) string {
	parts := []string{"gemkit extensions sandbox", extension.Printable(name)}
	if o.hook != "" {
		parts = append(parts, "--hook", extension.Printable(o.hook))
	}
	for _, h := range o.hosts {
		parts = append(parts, "--allow-host", extension.Printable(h))
	}
	if o.write != "" {
		parts = append(parts, "--allow-write", extension.Printable(o.write))
	}
	if o.unixSockets {
		parts = append(parts, "--allow-unix-sockets")
	}
	for _, k := range o.credentials {
		parts = append(parts, "--allow-credentials", extension.Printable(k))
	}
	for _, v := range o.env {
		parts = append(parts, "--allow-env", extension.Printable(v))
	}
	if o.defaultProfile {
		parts = append(parts, "--default-profile")
	}
	if o.installScripts {
		parts = append(parts, "--allow-install-scripts")
	}
	if o.dataLimit != "" {
		parts = append(parts, "--data-limit", extension.Printable(o.dataLimit))
	}
	return strings.Join(parts, " ")
}

// geminiSettingsPath is Gemini CLI's user settings file of the store.
func geminiSettingsPath(st *extension.Store) string { return geminisettings.Path(st.Home()) }

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

// widen applies o's widening flags to w.
func widen(w *extension.Widening, o sandboxFlags) error {
	w.Hosts = append(slices.Clone(w.Hosts), o.hosts...)
	if o.write != "" {
		w.Write = extension.Access(o.write)
	}
	w.UnixSockets = w.UnixSockets || o.unixSockets
	w.Credentials = append(slices.Clone(w.Credentials), o.credentials...)
	w.Env = append(slices.Clone(w.Env), o.env...)
	if o.dataLimit != "" {
		if o.hook != "" {
			return errors.New("--data-limit bounds the servers' data folder; a hook keeps nothing (it writes nothing), so it takes no --hook")
		}
		n, err := extension.ParseSize(o.dataLimit)
		if err != nil {
			return fmt.Errorf("--data-limit: %w", err)
		}
		w.DataBytes = n
	}
	c, err := w.Canonical()
	if err != nil {
		return fmt.Errorf("--allow-host, --allow-write, --allow-credentials, --allow-env or --data-limit: %w", err)
	}
	*w = c
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

// switchOff gives ext's servers and hooks back to Gemini CLI: it
// removes from mcp.excluded and hooksConfig.disabled what no other
// switched extension needs and gemkit had added, and gemkit's hooks for
// it. uninstalling says the extension is about to go: then nobody
// starts its servers after this, and switching again is no choice, so
// only the change to the settings is said.
func switchOff(a *app, st *extension.Store, name string, uninstalling bool) error {
	c, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	if !c.Switched {
		fmt.Fprintf(a.Out, "%s's MCP servers are not switched to gemkit: Gemini CLI starts them itself.\n", extension.Printable(name))
		return nil
	}
	path := geminiSettingsPath(st)
	res, err := syncSwitch(st, name, nil, nil)
	if err != nil {
		return err
	}
	if len(res.Included) > 0 {
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s.\n", strings.Join(res.Included, ", "), path)
	}
	sw, _ := st.Switches()
	var yours []string
	for _, n := range res.Kept {
		if o := sw.Names[n]; len(o.Needs) > 0 {
			fmt.Fprintf(a.Out, "Kept %s in mcp.excluded: the switched extension %s needs it too (Gemini CLI keys servers by name), so Gemini CLI starts neither's, and gemkit mcp serves %s's.\n", n, strings.Join(o.Needs, ", "), strings.Join(o.Needs, ", "))
		} else {
			yours = append(yours, n)
		}
	}
	var back []string
	for _, h := range c.Hooks {
		if h.Command != "" {
			back = append(back, h.Label)
		}
	}
	if len(back) > 0 && !uninstalling {
		fmt.Fprintf(a.Out, "Gemini CLI runs its hooks %s itself again, unconfined; gemkit's hooks for them are gone from %s.\n", strings.Join(back, ", "), path)
	}
	if uninstalling {
		return nil
	}
	if len(yours) > 0 {
		fmt.Fprintf(a.Out, "%s's MCP servers are no longer served by gemkit mcp; your own mcp.excluded in %s still names %s (it did before the switch), so Gemini CLI does not start them either. Switch again: gemkit extensions sandbox %s\n",
			extension.Printable(name), path, strings.Join(yours, ", "), extension.Printable(name))
		return nil
	}
	fmt.Fprintf(a.Out, "%s's MCP servers are Gemini CLI's again, which starts them unconfined, with your rights and environment; gemkit mcp no longer serves them. Switch again: gemkit extensions sandbox %s\n", extension.Printable(name), extension.Printable(name))
	return nil
}

// widens reports whether to gives the servers more than from: a host
// from did not allow, the workspace to write, or Unix sockets.
func widens(from, to extension.Widening) bool {
	for _, h := range to.Hosts {
		if !slices.Contains(from.Hosts, h) {
			return true
		}
	}
	for _, k := range to.Credentials {
		if !slices.Contains(from.Credentials, k) {
			return true
		}
	}
	for _, v := range to.Env {
		if !slices.Contains(from.Env, v) {
			return true
		}
	}
	return to.Write != "" && from.Write == "" || to.UnixSockets && !from.UnixSockets || to.DataBound() > from.DataBound()
}

func sharedNames(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
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

// forgetServers gives the servers and hooks of the extension name back
// to Gemini CLI, if they were switched, and forgets what the person
// chose for them: the extension is being uninstalled.
func forgetServers(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || (!c.Switched && c.Widening.Empty() && len(c.HookWidening) == 0) {
		return err
	}
	if c.Switched {
		if err := switchOff(a, st, name, true); err != nil {
			return err
		}
	}
	return st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { *c = extension.ServerChoice{} })
}

// keepSwitched keeps an updated extension switched: a server (of the
// manifest or an agent) or a hook the new version adds is taken from
// Gemini CLI as the switch would, so that Gemini CLI does not start it
// unconfined beside gemkit; one it dropped is let go of, where no other
// switched extension needs its name. The update asked for consent to
// the new version.
func keepSwitched(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || !c.Switched {
		return err
	}
	in, err := st.Get(name)
	if err != nil || in.Extension == nil {
		return err
	}
	parts, err := partsOf(a, st, in.Extension)
	if err != nil {
		return err
	}
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	if clash := sharedNames(parts.Names, gs.Servers); len(clash) > 0 {
		return fmt.Errorf("%s's new servers %s share a name with your own mcpServers in %s, so they are not excluded: Gemini CLI starts them itself; rename yours and run gemkit extensions sandbox %s", extension.Printable(name), strings.Join(clash, ", "), path, extension.Printable(name))
	}
	sw, err := st.Switches()
	if err != nil {
		return err
	}
	if clash := hookClashes(st, name, parts, gs, sw); len(clash) > 0 {
		// Its new hooks stay as they were: off in Gemini CLI where they
		// were, and the new ones Gemini CLI's.
		fmt.Fprintf(a.Err, "%s stays switched to gemkit, but its hooks were not changed: %s\n", extension.Printable(name), strings.Join(clash, "; "))
		parts.Hooks = nil
		for _, h := range c.Hooks {
			parts.Hooks = append(parts.Hooks, switchHook{CommandHook: extension.CommandHook{Label: h.Label, Event: h.Event}, Key: h.Key,
				Def: geminisettings.HookDef{Command: h.Command}})
		}
	}
	res, err := syncSwitch(st, name, parts, nil)
	if err != nil {
		return err
	}
	if len(res.Excluded) > 0 {
		fmt.Fprintf(a.Err, "%s stays switched to gemkit: Gemini CLI does not start or connect to its new server(s) %s either (mcp.excluded in %s).\n", extension.Printable(name), strings.Join(res.Excluded, ", "), path)
	}
	if len(res.Included) > 0 {
		fmt.Fprintf(a.Err, "Removed %s from mcp.excluded in %s: no switched extension has a server of that name any more.\n", strings.Join(res.Included, ", "), path)
	}
	if len(res.Disabled) > 0 {
		fmt.Fprintf(a.Err, "%s's new hooks run in gemkit's sandbox too (hooksConfig.disabled in %s).\n", extension.Printable(name), path)
	}
	return nil
}

// relinked makes links relative again and reads where consent to ext
// stands after: an error when consent still cannot bind its files.
func relinked(st *extension.Store, ext *extension.Extension, links []extension.CopiedLink) (extension.ConsentState, error) {
	if err := extension.RelinkCopied(ext.Dir, links); err != nil {
		return extension.ConsentState{}, fmt.Errorf("making the links of %s relative again: %w", extension.Printable(ext.Manifest.Name), err)
	}
	state, err := st.Consent(ext)
	if err == nil && state.Unbound != nil {
		err = state.Unbound
	}
	return state, err
}
