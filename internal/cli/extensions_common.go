package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/term"
)

// addExtensionManageCommands adds the manager: install, uninstall, list,
// describe, enable, disable, update, link, new, validate, doctor, consent
// and sandbox. The --home and
// --workspace flags are persistent on parent so the tool-running commands
// see the same store.
func addExtensionManageCommands(parent *cobra.Command, a *app) {
	parent.PersistentFlags().String("home", "", homeFlagUsage)
	parent.PersistentFlags().String("workspace", "", "workspace folder for ${workspacePath} and the workspace scope (default the current directory)")
	parent.AddCommand(
		newExtInstallCmd(a),
		newExtUninstallCmd(a),
		newExtListCmd(a),
		newExtDescribeCmd(a),
		newExtEnableCmd(a, true),
		newExtEnableCmd(a, false),
		newExtUpdateCmd(a),
		newExtLinkCmd(a),
		newExtNewCmd(a),
		newExtValidateCmd(a),
		newExtDoctorCmd(a),
		newExtConsentCmd(a),
		newExtSandboxCmd(a),
	)
}

// homeFlagUsage is the one meaning of --home, for every command that has
// it (extensions, mcp, run, chat): the folder that holds .gemini, as
// Gemini CLI's GEMINI_CLI_HOME.
const homeFlagUsage = "home folder that holds .gemini, not .gemini itself (default $" + extension.HomeEnv + " or your home directory)"

// resolveHome returns the home folder --home names, or the default one.
// A --home that names a .gemini folder itself (it holds extensions/ or
// settings.json but no .gemini) is refused with the folder to pass
// instead: taken as it is, every extension would silently be missing.
func resolveHome(home string) (string, error) {
	if home == "" {
		return extension.DefaultHome()
	}
	if filepath.Base(filepath.Clean(home)) == ide.AgentGemini.HomeDir {
		_, errInner := os.Stat(filepath.Join(home, ide.AgentGemini.HomeDir))
		_, errExt := os.Stat(filepath.Join(home, "extensions"))
		_, errSettings := os.Stat(filepath.Join(home, "settings.json"))
		if errInner != nil && (errExt == nil || errSettings == nil) {
			return "", fmt.Errorf("--home %s is a .gemini folder; --home is the folder that holds .gemini: use --home %s", home, filepath.Dir(filepath.Clean(home)))
		}
	}
	return home, nil
}

// openStore opens the extension store the --home and --workspace flags
// name; the tool-running commands use it too.
func openStore(cmd *cobra.Command) (*extension.Store, error) {
	home, _ := cmd.Flags().GetString("home")
	home, err := resolveHome(home)
	if err != nil {
		return nil, err
	}
	st := extension.OpenStore(home)
	// Leftovers of killed installs make Gemini CLI warn on every command;
	// the next gemkit command removes them.
	st.SweepStaging()
	if flag, _ := cmd.Flags().GetString("workspace"); flag != "" {
		ws, err := fsutil.Workspace(flag)
		if err != nil {
			return nil, err
		}
		st = st.WithWorkspace(ws)
	}
	return st, nil
}

// openInstalled opens the store as openStore does and finds the installed
// extension name in it, for the commands that act on one extension.
func openInstalled(cmd *cobra.Command, name string) (*extension.Store, *extension.Installed, error) {
	st, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	in, err := st.Get(name)
	if err != nil {
		return nil, nil, pathForName(st, name, err)
	}
	return st, in, nil
}

// isTerminal is term.IsTerminal, the one test of whether a stream is a
// terminal, under the name the commands use.
func isTerminal(v any) bool { return term.IsTerminal(v) }

// errNeedsConsent is the refusal when nobody can be asked. The consent
// text has been printed just before it, so the person can read what they
// would agree to before running the command again with --consent.
func errNeedsConsent(what string) error { return &needsConsentError{what} }

// needsConsentError is errNeedsConsent's refusal; it names the action
// and the extension itself (what), so a command that reports it for one
// extension among several need not name them again.
type needsConsentError struct{ what string }

func (e *needsConsentError) Error() string {
	return e.what + " needs your consent, and there is no terminal to ask on (stdin is not a terminal); " +
		"nothing was changed. Read what it will be able to do above, then run it in a terminal, or again with --consent to agree"
}

// consentNotGiven reports whether err is consent not given: refused
// at the question, or with nobody to ask (no terminal, no --consent).
// A command ends with ExitNo for it, the no docs/extensions.md's exit
// codes promise, not ExitError: nothing was wrong with the command, the
// person did not (or could not) agree.
func consentNotGiven(err error) bool {
	var nc *needsConsentError
	return errors.As(err, &nc) || errors.Is(err, extension.ErrConsentRefused)
}

// consentFunc asks on the terminal, or agrees when --consent was given.
// Either way the consent text goes to stderr, so what was agreed to is on
// record. Run by an agent's shell, neither a y nor --consent agrees: the
// person types the extension's name on the terminal (personConfirms), as
// for `consent --grant`, since the model may be the one running install
// or update.
func consentFunc(a *app, given bool) extension.ConsentFunc {
	return func(ctx context.Context, p extension.ConsentPrompt) (bool, error) {
		for _, l := range p.Lines {
			fmt.Fprintln(a.Err, extension.Printable(l))
		}
		// Said only where a question follows: on the terminal, or in an
		// agent's shell, where the person types the name.
		if a.agentShell() != "" || !given && isTerminal(a.In) {
			fmt.Fprintln(a.Err, extension.ReadBeforeAgreeing)
		}
		if given || a.agentShell() != "" {
			name := p.Extension.Manifest.Name
			again := "this `gemkit extensions " + strings.ToLower(p.Action) + "` command"
			if p.Action == "Update" {
				again = "`gemkit extensions update " + extension.Printable(name) + "`"
			}
			if ok, err := a.personConfirms(ctx, name, again); err != nil || !ok {
				return false, err
			}
			if given {
				fmt.Fprintln(a.Err, "Consent given with --consent.")
			}
			return true, nil
		}
		if !isTerminal(a.In) {
			return false, errNeedsConsent(strings.ToLower(p.Action) + " " + extension.Printable(p.Extension.Manifest.Name))
		}
		fmt.Fprint(a.Err, "\nDo you want to continue? [y/N]: ")
		answer, err := term.ReadLine(ctx, a.In)
		return isYes(answer), err
	}
}

// argsUsage accepts min to max arguments (max < 0: any number) and
// otherwise answers with the command's usage line, which says what the
// arguments are, where cobra would only count them.
func argsUsage(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return fmt.Errorf("usage: %s (see `%s --help`)", strings.TrimSuffix(cmd.UseLine(), " [flags]"), cmd.CommandPath())
		}
		return nil
	}
}

// pathForName turns the refusal of a folder given where an extension's
// name is wanted (`describe ./my-ext`) into one that names the extension
// in that folder: the installed one to use, or how to install it.
func pathForName(st *extension.Store, arg string, err error) error {
	if !strings.ContainsAny(arg, `/\`) && arg != "." && arg != ".." {
		return err
	}
	ext, lerr := extension.Load(arg)
	if ext == nil {
		if lerr != nil {
			return fmt.Errorf("%q is a path, and an extension's name is wanted here (see `gemkit extensions list`): %v", arg, lerr)
		}
		return err
	}
	name := ext.Manifest.Name
	if _, gerr := st.Get(name); gerr == nil {
		return fmt.Errorf("%q is a folder; name the extension instead: %s", arg, name)
	}
	return fmt.Errorf("%q is a folder holding extension %s, which is not installed: `gemkit extensions link %s` uses it in place, `gemkit extensions install %s` copies it", arg, name, arg, arg)
}

// completeExtension completes the first argument with the installed
// extensions' names (shell completion: `gemkit completion`).
func completeExtension(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return installedNames(cmd), cobra.ShellCompDirectiveNoFileComp
}

// completeExtensionTool completes an extension's name, then its tools.
func completeExtensionTool(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return installedNames(cmd), cobra.ShellCompDirectiveNoFileComp
	case 1:
		st, in, err := openInstalled(cmd, args[0])
		if err != nil || st == nil || in.Manifest() == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var tools []string
		for _, t := range in.Manifest().Tools {
			tools = append(tools, t.Name+"\t"+t.Description)
		}
		return tools, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

func installedNames(cmd *cobra.Command) []string {
	all := listInstalled(cmd)
	names := make([]string, 0, len(all))
	for _, in := range all {
		names = append(names, in.Name)
	}
	return names
}

// listInstalled lists the store the flags name, nil when it cannot be read
// (for completion and checks that add to another answer).
func listInstalled(cmd *cobra.Command) []*extension.Installed {
	st, err := openStore(cmd)
	if err != nil {
		return nil
	}
	all, err := st.List()
	if err != nil {
		return nil
	}
	return all
}
