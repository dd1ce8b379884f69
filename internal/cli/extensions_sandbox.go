package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
)

// sandboxFlags are the flags of `gemkit extensions sandbox`.
type sandboxFlags struct {
	off            bool
	hosts          []string
	write          string
	unixSockets    bool
	credentials    []string
	env            []string
	defaultProfile bool
}

func newExtSandboxCmd(a *app) *cobra.Command {
	var o sandboxFlags
	cmd := &cobra.Command{
		Use:               "sandbox <name>",
		ValidArgsFunction: completeExtension,
		Short:             "Run an extension's MCP servers in gemkit's sandbox instead of unconfined in Gemini CLI",
		Long: `Switch an extension's MCP servers to gemkit: Gemini CLI stops starting its stdio
servers (its mcpServers entries with a command) itself, with your rights and your
whole environment, and ` + "`gemkit mcp`" + ` serves them in gemkit's sandbox. Its
remote servers (url, httpUrl) go with them: Gemini CLI stops connecting to them
and gemkit mcp connects instead, as Gemini CLI would; they run elsewhere, so
they are not sandboxed. Gemini CLI keeps the extension's context files,
commands, hooks and skills, and reaches the servers' tools through gemkit mcp
(gemini mcp add -s user --trust gemkit gemkit mcp), as Claude Code, Codex,
OpenCode and Qwen Code do.

In the sandbox each stdio server can ` + extension.SandboxedServerWords + `.
What the extension's manifest declares in its permissions (allowed hosts, a
write scope, credentials by kind) its servers take too. --allow-host,
--allow-write, --allow-unix-sockets, --allow-credentials and --allow-env widen
that, by name; each widening is recorded, shown by describe and agreed to with
the extension's consent. A variable passed with --allow-env comes from the
environment of the gemkit mcp that starts the server, which is what its client
gave it: Gemini CLI 0.61 leaves out of it every variable whose name holds TOKEN,
KEY, SECRET, AUTH, PASSWORD, CREDENTIAL and the like unless gemkit's entry in
its settings names it ("env": {"TFE_TOKEN": "$TFE_TOKEN"}).

The command shows what you agree to and records your consent to the extension
as it is now (its tools' permissions, its servers' profile and its files): in
a terminal running it is agreeing; in an agent's shell you type the
extension's name on the terminal (as consent --grant).

What it changes in Gemini CLI: the server names are added to mcp.excluded in
~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json when set),
which Gemini CLI 0.61 honours for an extension's servers; nothing else of that
file changes, its comments included, and it is written atomically. --off
removes exactly the names it added and gives the servers back to Gemini CLI.
docs/extensions.md has the details.`,
		Example: `  gemkit extensions new ./memory-ext mcp && gemkit extensions link ./memory-ext --consent
  gemkit extensions sandbox memory-ext
  gemkit extensions sandbox memory-ext --allow-host api.example.com --allow-write workspace
  gemkit extensions sandbox memory-ext --allow-unix-sockets  # as a browser server needs
  gemkit extensions sandbox memory-ext --allow-credentials gcloud  # your application default credentials
  gemkit extensions sandbox memory-ext --allow-env TFE_TOKEN       # one variable of yours, by name
  gemkit extensions sandbox memory-ext --default-profile   # forget the widenings
  gemkit extensions sandbox memory-ext --off               # back to Gemini CLI, unconfined`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			if in.Extension == nil {
				return fmt.Errorf("extension %s cannot be read: %w", in.Name, in.Err)
			}
			if o.off {
				if len(o.hosts) > 0 || o.write != "" || o.unixSockets || len(o.credentials) > 0 || len(o.env) > 0 || o.defaultProfile {
					return errors.New("--off takes no --allow-host, --allow-write, --allow-unix-sockets, --allow-credentials, --allow-env or --default-profile: it gives the servers back to Gemini CLI, and their widening stays recorded for the next switch")
				}
				return switchOff(a, st, in.Extension.Manifest.Name, false)
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
	return cmd
}

// command is the command line that asks for o, for a person to run in
// a terminal of their own.
func (o sandboxFlags) command(name string) string {
	parts := []string{"gemkit extensions sandbox", extension.Printable(name)}
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
	return strings.Join(parts, " ")
}

// geminiSettingsPath is Gemini CLI's user settings file of the store.
func geminiSettingsPath(st *extension.Store) string { return geminisettings.Path(st.Home()) }

// switchOn switches ext's servers to gemkit with the widening o asks
// for, after the person agrees (the consent record then holds the new
// terms).
func switchOn(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, o sandboxFlags, command string) error {
	m := ext.Manifest
	name := m.Name
	if len(extension.SandboxedServers(m)) == 0 {
		why := "gemkit runs stdio servers, those with a command, and takes an extension's remote servers along only with them: alone, they stay Gemini CLI's; gemkit itself stays as it is"
		if cs := extension.ContainerServers(m); len(cs) > 0 {
			why = strings.Join(cs, ", ") + ": " + extension.ContainerWords(extension.ContainerCommand(m.MCPServers[cs[0]]))
		}
		return withExitCode(ExitNo, fmt.Errorf("%s has no MCP server gemkit can run in its sandbox (%s)", extension.Printable(name), why))
	}
	servers := extension.SwitchedServers(m)
	old, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	w := old.Widening
	if o.defaultProfile {
		w = extension.Widening{}
	}
	w.Hosts = append(slices.Clone(w.Hosts), o.hosts...)
	if o.write != "" {
		w.Write = extension.Access(o.write)
	}
	w.UnixSockets = w.UnixSockets || o.unixSockets
	w.Credentials = append(slices.Clone(w.Credentials), o.credentials...)
	w.Env = append(slices.Clone(w.Env), o.env...)
	if w, err = w.Canonical(); err != nil {
		return fmt.Errorf("--allow-host, --allow-write, --allow-credentials or --allow-env: %w", err)
	}
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	if clash := sharedNames(servers, gs.Servers); len(clash) > 0 {
		return withExitCode(ExitNo, fmt.Errorf("not switched: Gemini CLI's mcp.excluded names servers, not extensions, and your own mcpServers in %s has %s, which excluding %s's servers of the same name would stop too; rename yours first", path, strings.Join(clash, ", "), extension.Printable(name)))
	}

	next := old
	next.Switched, next.Widening = true, w
	state, err := st.Consent(ext)
	if err != nil {
		return err
	}
	if state.Notice != "" {
		// What changed since the person agreed, before what they agree to.
		fmt.Fprintln(a.Out, extension.Printable(state.Notice))
	}
	for _, l := range extension.ConsentTextWith(ext, "Switching to gemkit's sandbox:", next) {
		fmt.Fprintln(a.Out, l)
	}
	// Switching alone narrows what the servers can do; agreeing is asked
	// for when there is no consent to the extension as it is now, or when
	// the servers get more than they had.
	if !state.Granted || widens(old.Widening, w) {
		if ok, err := a.personConfirms(ctx, name, "`"+command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}

	added, created, err := geminisettings.Exclude(path, servers)
	if err != nil {
		return err
	}
	// A server a container engine starts that an earlier switch put in
	// mcp.excluded (before gemkit left such servers to Gemini CLI) is
	// given back: nothing else would start it.
	back := sharedNames(extension.ContainerServers(m), old.Excluded)
	if len(back) > 0 {
		if _, err := geminisettings.Include(path, back, nil); err != nil {
			return err
		}
	}
	err = st.UpdateServerChoice(name, func(c *extension.ServerChoice, made *[]string) {
		c.Switched, c.Widening = true, w
		c.Excluded = slices.DeleteFunc(union(c.Excluded, added), func(n string) bool { return slices.Contains(back, n) })
		*made = union(*made, created)
	})
	if err == nil {
		err = st.RecordConsentContent(name, state.Hash, state.Content)
	}
	if err != nil {
		if _, undo := geminisettings.Include(path, added, created); undo != nil {
			return fmt.Errorf("%w (and putting %s back as it was: %v)", err, path, undo)
		}
		return err
	}
	fmt.Fprintf(a.Out, "\nSwitched: %s (mcp.excluded in %s); %s. Consent recorded to %s as it is now.\n",
		notStarted(m), path, servedWords(m), extension.Printable(name))
	for _, c := range extension.ContainerServers(m) {
		fmt.Fprintf(a.Out, "Not switched: %s, %s.\n", c, extension.ContainerWords(extension.ContainerCommand(m.MCPServers[c])))
	}
	if gs.Gemkit == "" {
		fmt.Fprintln(a.Out, "Gemini CLI reaches them through gemkit mcp; add it once: gemini mcp add -s user --trust gemkit gemkit mcp")
	}
	// What the servers may now do beyond the default profile, and how to
	// take it back: the consent text above says it inside each server's
	// line, where a widening just given is easy to miss.
	switch {
	case !w.Empty():
		fmt.Fprintf(a.Out, "Allowed beyond the default profile: %s. Back to it: gemkit extensions sandbox %s --default-profile\n", w.Words(), extension.Printable(name))
	case !old.Widening.Empty():
		fmt.Fprintln(a.Out, "Back to the default profile: nothing allowed beyond it.")
	}
	for _, n := range widenNotes(m, extension.ServerGrant(m).Union(w), gs, a.getenv) {
		fmt.Fprintf(a.Out, "Note: %s.\n    fix: %s\n", n.Message, n.Fix)
	}
	// The clients hide most of a failed call (Gemini CLI 0.61 shows none
	// of its text), so the person is told where the refusals are said.
	fmt.Fprintf(a.Out, "What the sandbox refuses %s: gemkit extensions doctor, with the command that allows each.\n", them(len(extension.SandboxedServers(m))))
	fmt.Fprintf(a.Out, "Undo: gemkit extensions sandbox %s --off\n", extension.Printable(name))
	return nil
}

// switchOff gives ext's servers back to Gemini CLI: it removes from
// mcp.excluded the names the switch added, and the keys it made once
// no switched extension needs them. uninstalling says the extension is
// about to go: then nobody starts its servers after this, and switching
// again is no choice, so only the change to the settings is said.
func switchOff(a *app, st *extension.Store, name string, uninstalling bool) error {
	c, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	if !c.Switched {
		fmt.Fprintf(a.Out, "%s's MCP servers are not switched to gemkit: Gemini CLI starts them itself.\n", extension.Printable(name))
		return nil
	}
	all, err := st.ServerChoices()
	if err != nil {
		return err
	}
	var drop []string
	others := false
	for n, oc := range all {
		others = others || n != name && len(oc.Excluded) > 0
	}
	if !others {
		if drop, err = st.CreatedSettings(); err != nil {
			return err
		}
	}
	path := geminiSettingsPath(st)
	removed, err := geminisettings.Include(path, c.Excluded, drop)
	if err != nil {
		return err
	}
	var still []string
	if in, err := st.Get(name); err == nil && in.Extension != nil {
		if gs, err := geminisettings.Read(path); err == nil {
			still = sharedNames(extension.SwitchedServers(in.Extension.Manifest), gs.Excluded)
		}
	}
	if err := st.UpdateServerChoice(name, func(c *extension.ServerChoice, made *[]string) {
		c.Switched, c.Excluded = false, nil
		if !others {
			*made = nil
		}
	}); err != nil {
		return err
	}
	if len(removed) > 0 {
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s.\n", strings.Join(removed, ", "), path)
	}
	if uninstalling {
		return nil
	}
	if len(still) > 0 {
		fmt.Fprintf(a.Out, "%s's MCP servers are no longer served by gemkit mcp; your own mcp.excluded in %s still names %s (it did before the switch), so Gemini CLI does not start them either. Switch again: gemkit extensions sandbox %s\n",
			extension.Printable(name), path, strings.Join(still, ", "), extension.Printable(name))
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
	return to.Write != "" && from.Write == "" || to.UnixSockets && !from.UnixSockets
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

// forgetServers gives the servers of the extension name back to Gemini
// CLI, if they were switched, and forgets what the person chose for
// them: the extension is being uninstalled.
func forgetServers(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || (!c.Switched && c.Widening.Empty()) {
		return err
	}
	if c.Switched {
		if err := switchOff(a, st, name, true); err != nil {
			return err
		}
	}
	return st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { *c = extension.ServerChoice{} })
}

// keepSwitched keeps an updated extension's servers switched: a server
// the new version adds is added to Gemini CLI's mcp.excluded as the
// switch would, so that Gemini CLI does not start it unconfined (or
// connect to it) beside gemkit. The update asked for consent to the new
// version.
func keepSwitched(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || !c.Switched {
		return err
	}
	in, err := st.Get(name)
	if err != nil || in.Extension == nil {
		return err
	}
	servers := extension.SwitchedServers(in.Extension.Manifest)
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	if clash := sharedNames(servers, gs.Servers); len(clash) > 0 {
		return fmt.Errorf("%s's new servers %s share a name with your own mcpServers in %s, so they are not excluded: Gemini CLI starts them itself; rename yours and run gemkit extensions sandbox %s", extension.Printable(name), strings.Join(clash, ", "), path, extension.Printable(name))
	}
	added, created, err := geminisettings.Exclude(path, servers)
	if err != nil || len(added) == 0 {
		return err
	}
	if err := st.UpdateServerChoice(name, func(c *extension.ServerChoice, made *[]string) {
		c.Excluded = union(c.Excluded, added)
		*made = union(*made, created)
	}); err != nil {
		return err
	}
	fmt.Fprintf(a.Err, "%s stays switched to gemkit: Gemini CLI does not start or connect to its new server(s) %s either (mcp.excluded in %s).\n", extension.Printable(name), strings.Join(added, ", "), path)
	return nil
}
