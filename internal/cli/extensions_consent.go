package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
)

// consentHint is how every refusal for want of consent says to give it:
// one command that shows what the person agrees to and runs nothing.
func consentHint(ext string) string { return "`" + agreeCommand(ext) + "`" }

// withoutConsent says what an extension's tools do without consent, by
// route: they ask where someone can answer and are refused where no one
// can. Every route is named, since what holds for one does not for the
// others.
const withoutConsent = "its tools ask before they run where someone can answer (gemkit chat and extensions run on a terminal, an editor through gemkit acp, an MCP client that can ask such as Claude Code) and are refused where no one can (gemkit run, Gemini CLI through gemkit mcp)"

// revokedWords say what withdrawn consent does to m's tools and MCP
// servers: the tools ask or are refused (withoutConsent), the servers
// that gemkit mcp runs in its sandbox are not started at all, since
// starting one is not a call anyone could be asked about. An extension
// with servers and no tools is told of its servers only.
func revokedWords(m *extension.Manifest) string {
	servers := extension.SandboxedServers(m)
	if len(servers) == 0 {
		return withoutConsent
	}
	words := "gemkit mcp does not start its MCP servers (" + strings.Join(servers, ", ") + ") until you agree again with `gemkit extensions consent " + m.Name + " --grant`"
	if len(m.Tools) == 0 {
		return words
	}
	return withoutConsent + "; " + words
}

// grantedWords say what consent just given lets m's tools and its
// sandboxed MCP servers do.
func grantedWords(m *extension.Manifest) string {
	switch tools, servers := extension.ToolPermissionsShown(m), len(extension.SandboxedServers(m)) > 0; {
	case tools && servers:
		return "its tools run with the permissions above, and gemkit mcp runs its MCP servers as above"
	case servers:
		return "gemkit mcp runs its MCP servers as above"
	}
	return "its tools run with the permissions above"
}

// notRunWords say what does not run while m lacks consent.
func notRunWords(m *extension.Manifest) string {
	switch tools, servers := extension.ToolPermissionsShown(m), len(extension.SandboxedServers(m)) > 0; {
	case tools && servers:
		return "neither its tools nor its MCP servers run"
	case servers:
		return "gemkit mcp does not start its MCP servers"
	}
	return "its tools do not run"
}

func newExtConsentCmd(a *app) *cobra.Command {
	var grant, revoke bool
	cmd := &cobra.Command{
		Use:               "consent <name>",
		ValidArgsFunction: completeExtension,
		Short:             "Show, give or withdraw your consent to an extension's tools running; runs nothing",
		Long: `Show what an extension's tools may do (its permissions) and whether you agreed
to them running, as they are now: the permissions and the extension's files.
Consent is bound to both, so a linked extension whose files change, or an
update that changes its permissions, needs it again.

--grant records your consent to the extension as it is now; --revoke
withdraws it. Without consent, ` + withoutConsent + `. Neither runs a tool.

Run by an agent's shell (Gemini CLI, Claude Code and Codex mark the
commands their model runs), --grant records nothing until you type the
extension's name on the terminal, and with no terminal it is refused: a
model must not agree for you (docs/mcp.md).`,
		Example: `  gemkit extensions new ./my-ext && gemkit extensions link ./my-ext --consent
  gemkit extensions consent my-ext --revoke   # withdraw
  gemkit extensions consent my-ext --grant    # agree to it as it is now
  gemkit extensions consent my-ext            # what it may do, and that you agreed`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if grant && revoke {
				return errors.New("--grant and --revoke exclude each other")
			}
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			if in.Extension == nil {
				return fmt.Errorf("extension %s cannot be read: %w", in.Name, in.Err)
			}
			if revoke {
				name := in.Extension.Manifest.Name
				if err := st.ForgetConsent(name); err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "Consent to %s withdrawn: %s.\n", name, revokedWords(in.Extension.Manifest))
				return nil
			}
			return showConsent(cmd.Context(), a, st, in.Extension, grant)
		},
	}
	cmd.Flags().BoolVar(&grant, "grant", false, "record your consent to the extension as it is now (permissions and files)")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "withdraw your consent")
	return cmd
}

// showConsent says what ext's tools may do and whether the person agreed
// to it as it is now; with grant it records the consent (once the person
// confirms, in an agent's shell). Consent not given ends with ExitNo.
func showConsent(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, grant bool) error {
	name := ext.Manifest.Name
	sw := a.switcher(st)
	// Agreeing to a switched extension pins the packages its
	// package-runner servers fetch, as the switch does.
	ag, err := sw.Agreement(ctx, ext, grant, pinning(a, name))
	if err != nil {
		return err
	}
	defer ag.Release()
	choice, plan, state, links := ag.Choice, ag.Plan, ag.State, ag.Links
	if state.Notice != "" {
		// Before the permissions and apart from them: what changed is no
		// permission, and it is to be looked at before the rest is
		// agreed to again.
		fmt.Fprintln(a.Out, extension.Printable(state.Notice))
	}
	m := ext.Manifest
	if extension.ToolPermissionsShown(m) {
		fmt.Fprintf(a.Out, "Extension %s (%s) may:\n", extension.Printable(name), extension.Printable(ext.Dir))
		for _, l := range extension.PermissionsSummary(m) {
			fmt.Fprintf(a.Out, "  - %s\n", extension.Printable(l))
		}
	} else {
		// "may: no access to your files" would read as a contradiction
		// of its servers' lines below, which are all it runs.
		fmt.Fprintf(a.Out, "Extension %s (%s) has no tools of its own.\n", extension.Printable(name), extension.Printable(ext.Dir))
	}
	if len(extension.SandboxedServers(ext.Manifest)) > 0 {
		// Consent covers the servers' profile too, widenings and pinned
		// packages included.
		fmt.Fprintln(a.Out, "Its MCP servers:")
		for _, l := range extension.ServerLines(ext.Manifest, choice) {
			fmt.Fprintf(a.Out, "  - %s\n", extension.Printable(l))
		}
		writePackageLines(a, plan, geminiFetches)
	}
	when := state.GrantedAt.Local().Format(time.DateTime)
	// The check every start makes: files consent cannot bind are said,
	// and no consent is recorded to them, but the links a copy made
	// absolute, which a grant repairs.
	if err := extension.WithoutCopied(state.Unbound, links); err != nil {
		fmt.Fprintf(a.Out, "Consent: cannot be given to it as it is: %s\n", extension.Printable(err.Error()))
		return withExitCode(ExitNo, nil)
	}
	if len(links) > 0 && !state.Granted {
		fmt.Fprintln(a.Out, extension.CopiedLinksWords(links)+" --grant makes them so once you agree.")
	}
	switch {
	case state.Granted:
		fmt.Fprintf(a.Out, "Consent: given %s, to these permissions and these files.\n", when)
		// Its files are back as agreed: a hold placed while they were
		// not goes.
		return releaseHold(a, st, name)
	case grant:
		if ok, err := a.personConfirms(ctx, name, ""); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
		agreedErr, err := sw.Agree(ctx, ext, ag)
		if err != nil {
			return switchErr(err)
		}
		tellAgreedErr(a, agreedErr)
		fmt.Fprintf(a.Out, "Consent given to %s as it is now: %s (withdraw it with `gemkit extensions consent %s --revoke`).\n", name, grantedWords(m), name)
		if choice.Switched {
			// The hooks the switch took are taken back with the hold's
			// release: say so, rather than let them vanish.
			if _, err := ext.CommandHooks(); err != nil {
				fmt.Fprintf(a.Out, "Its hooks cannot be read (%s): none of them runs, in Gemini CLI or in gemkit's sandbox, until the file is fixed and you agree again.\n", extension.Printable(err.Error()))
			}
		}
		return releaseHold(a, st, name)
	case state.PermissionsChanged:
		fmt.Fprintf(a.Out, "Consent: given %s to other permissions; %s until you agree to these.\n", when, notRunWords(m))
	case state.FilesChanged:
		fmt.Fprintf(a.Out, "Consent: given %s to these permissions but not to its files as they are now (see above); %s until you agree again.\n", when, notRunWords(m))
	default:
		fmt.Fprintf(a.Out, "Consent: not given; %s.\n", revokedWords(m))
	}
	fmt.Fprintf(a.Out, "To agree: %s\n", consentHint(name))
	return withExitCode(ExitNo, nil)
}

// pinning says, before the first package of the extension name is
// installed, that its servers' packages are being pinned.
func pinning(a *app, name string) func() {
	return func() {
		fmt.Fprintf(a.Err, "Pinning the packages %s's servers fetch through a package runner:\n", extension.Printable(name))
	}
}
