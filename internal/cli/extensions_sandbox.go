package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gemkit/gemkit/internal/extension"
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
		Long:              extSandboxLong,
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
				if o.widens() {
					return errors.New("--off takes no --hook, --allow-host, --allow-write, --allow-unix-sockets, --allow-credentials, --allow-env, --allow-install-scripts, --data-limit or --default-profile: it gives the servers and hooks back to Gemini CLI, and their widening stays recorded for the next switch")
				}
				return switchOff(a, st, in)
			}
			return switchOn(cmd.Context(), a, st, in, o, o.commandOf("gemkit extensions sandbox", in.Extension.Manifest.Name))
		},
	}
	o.define(cmd.Flags(), "Gemini CLI")
	return cmd
}

// define defines o's flags on f: extensions and plugins sandbox's.
func (o *sandboxFlags) define(f *pflag.FlagSet, agent string) {
	f.BoolVar(&o.off, "off", false, "give the servers back to "+agent+" (unconfined): undo the switch")
	f.StringArrayVar(&o.hosts, "allow-host", nil, "let the servers connect to this host (as permissions.network.allowedHosts: api.example.com, *.example.com, localhost:8080), through the sandbox's proxy; repeatable")
	f.StringVar(&o.write, "allow-write", "", "what the servers may write besides their data folder: workspace, or none")
	f.BoolVar(&o.unixSockets, "allow-unix-sockets", false, "let the servers create Unix sockets, which reach only those inside the sandbox (a browser's own processes), never your services'")
	f.StringArrayVar(&o.credentials, "allow-credentials", nil, "hand the servers one kind of your credentials ("+strings.Join(permission.ServerCredentialKinds(), ", ")+"), read-only, where their libraries look for them in their HOME: the files at the kind's own place in your home, as they are when you agree, never a file a variable names; repeatable")
	f.StringArrayVar(&o.env, "allow-env", nil, "pass the servers this variable of yours, by name, from the environment of the gemkit mcp that starts them (a $NAME in the manifest's env takes it too); repeatable")
	f.BoolVar(&o.defaultProfile, "default-profile", false, "forget every widening: back to the default profile")
	f.BoolVar(&o.installScripts, "allow-install-scripts", false, "let the install scripts of the packages its package-runner servers (npx, ...) run, after npm fetched them, in a sandbox with no network and none of your npm configuration; they are off by default")
	f.StringVar(&o.hook, "hook", "", "widen (or, with --default-profile, narrow back) this hook (its label, as describe shows it) rather than the servers")
	f.StringVar(&o.dataLimit, "data-limit", "", "how much the servers may keep in the extension's data folder (default 1GiB): a server that reaches it is stopped and reported; e.g. 4GiB")
}

// widens reports whether o asks for a widening, which --off takes none of.
func (o sandboxFlags) widens() bool {
	return len(o.hosts) > 0 || o.write != "" || o.unixSockets || len(o.credentials) > 0 || len(o.env) > 0 || o.defaultProfile || o.hook != "" || o.installScripts || o.dataLimit != ""
}

// extSandboxLong is the sandbox command's help: what the switch moves
// from Gemini CLI to gemkit, and what it changes in Gemini CLI's settings.
var extSandboxLong = `Switch an extension to gemkit: Gemini CLI stops starting its stdio MCP servers
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

Credentials (--allow-credentials KIND) are the files at the kind's own place
in your home, checked and shown as they are when you agree: a file changed
since is not handed, and a variable that would have the kind's programs read
another file refuses the switch and the server's start.
` + strings.Join(permission.CredentialPlacesLines("  ", "~"), "\n") + `

A server started by a package runner (npx -y pkg, npm exec, pnpm dlx, bunx,
yarn dlx), which Gemini CLI lets fetch the package from the registry at each
start with your rights, is pinned: gemkit installs the package once, at an
exact version (the newest for a bare name or @latest, shown), in its sandbox
with no network but the registry of your npm configuration and install
scripts off (--allow-install-scripts lets them run after, in a sandbox of
their own with no network and none of your npm configuration), and the
server runs from that tree with no registry access. The tree is part of
your consent, checked at every start; gemkit extensions update pins again
and asks again.

The command shows what you agree to and records your consent to the extension
as it is now (its tools' permissions, its servers' and hooks' profiles and its
files): in a terminal running it is agreeing; in an agent's shell you type the
extension's name on the terminal (as consent --grant).

Once switched, it starts and lists each stdio server as gemkit mcp does (in the
sandbox, in an empty workspace) and says "gemkit mcp serves" only of those that
listed, with their tools; one that could not start or list is said NOT SERVED,
with why and what to do, and so say list, describe and doctor. An extension
gemkit does not load (a manifest it refuses) is not switched.

What it changes in Gemini CLI: mcp.excluded, hooksConfig.disabled and its own
hooks under hooks in ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json
when set), which Gemini CLI 0.61 honours for an extension's servers and hooks;
nothing else of that file changes, its comments included, and it is written
atomically. gemkit records which switched extensions need each name and hook it
writes there, and whether it was yours: --off (and uninstall, and update for
what a new version drops) removes only what no switched extension needs and
gemkit added, and gives the rest back to Gemini CLI. A hook name another hook
of yours, or of an extension not switched, also uses is refused.
docs/extensions-sandbox.md has the details.`

// commandOf is the command line of cmd (gemkit extensions sandbox, or
// plugins sandbox) that asks for o for name, for a person to run in a
// terminal of their own.
func (o sandboxFlags) commandOf(cmd, name string) string {
	parts := []string{cmd, extension.Printable(name)}
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

// widen applies o's widening flags to w, each flag's value checked on
// its own first (sandboxFlags.check), so that a bad one is said with the
// flag that gave it.
func widen(w *extension.Widening, o sandboxFlags) error {
	if o.dataLimit != "" && o.hook != "" {
		return errors.New("--data-limit bounds the servers' data folder; a hook keeps nothing (it writes nothing), so it takes no --hook")
	}
	dataBytes, err := o.check()
	if err != nil {
		return err
	}
	w.Hosts = append(slices.Clone(w.Hosts), o.hosts...)
	if o.write != "" {
		w.Write = extension.Access(o.write)
	}
	w.UnixSockets = w.UnixSockets || o.unixSockets
	w.Credentials = append(slices.Clone(w.Credentials), o.credentials...)
	w.Env = append(slices.Clone(w.Env), o.env...)
	if o.dataLimit != "" {
		w.DataBytes = dataBytes
	}
	c, err := w.Canonical()
	if err != nil {
		// Each flag passed on its own: what fails is the widening
		// recorded before, with them.
		return fmt.Errorf("the widening recorded, with these flags: %w", err)
	}
	*w = c
	return nil
}

// check checks each widening flag of o on its own, so that a bad value
// is said with the one flag that gave it, in the words of the check that
// refuses it (Widening.Canonical); it returns --data-limit's bytes.
func (o sandboxFlags) check() (dataBytes int64, err error) {
	type flagged struct {
		flag string
		w    extension.Widening
	}
	var each []flagged
	for _, h := range o.hosts {
		if _, err := extension.ParseHost(h); err != nil {
			return 0, fmt.Errorf("--allow-host %q: the host %v; give one host to each --allow-host, as permissions.network.allowedHosts takes it: api.example.com, *.example.com, localhost:8080", h, err)
		}
		each = append(each, flagged{"--allow-host", extension.Widening{Hosts: []string{h}}})
	}
	if o.write != "" {
		each = append(each, flagged{"--allow-write", extension.Widening{Write: extension.Access(o.write)}})
	}
	for _, k := range o.credentials {
		each = append(each, flagged{"--allow-credentials", extension.Widening{Credentials: []string{k}}})
	}
	for _, v := range o.env {
		each = append(each, flagged{"--allow-env", extension.Widening{Env: []string{v}}})
	}
	if o.dataLimit != "" {
		if dataBytes, err = extension.ParseSize(o.dataLimit); err != nil {
			return 0, fmt.Errorf("--data-limit: %w", err)
		}
		each = append(each, flagged{"--data-limit", extension.Widening{DataBytes: dataBytes}})
	}
	for _, f := range each {
		if _, err := f.w.Canonical(); err != nil {
			return 0, fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return dataBytes, nil
}
