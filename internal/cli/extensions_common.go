package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gemkit/gemkit/internal/extension"
)

// addExtensionManageCommands adds the manager: install, uninstall, list,
// describe, enable, disable, update, link, new and validate. The --home and
// --workspace flags are persistent on parent so the tool-running commands
// see the same store.
func addExtensionManageCommands(parent *cobra.Command, a *app) {
	parent.PersistentFlags().String("home", "", "home folder that holds .gemini (default $"+extension.HomeEnv+" or your home directory)")
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
	)
}

// openStore opens the extension store the --home and --workspace flags
// name; the tool-running commands use it too.
func openStore(cmd *cobra.Command) (*extension.Store, error) {
	home, _ := cmd.Flags().GetString("home")
	if home == "" {
		var err error
		if home, err = extension.DefaultHome(); err != nil {
			return nil, err
		}
	}
	st := extension.OpenStore(home)
	// Leftovers of killed installs make Gemini CLI warn on every command;
	// the next gemkit command removes them.
	st.SweepStaging()
	if ws, _ := cmd.Flags().GetString("workspace"); ws != "" {
		fi, err := os.Stat(ws)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--workspace %s is not a folder", ws)
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
		return nil, nil, err
	}
	return st, in, nil
}

// isTerminal reports whether r is a terminal a person can answer on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// errNeedsConsent is the refusal when nobody can be asked. The consent
// text has been printed just before it, so the person can read what they
// would agree to before running the command again with --consent.
func errNeedsConsent(what string) error {
	return withExitCode(ExitError, fmt.Errorf("%s needs your consent, and there is no terminal to ask on (stdin is not a terminal); "+
		"nothing was changed. Read what it will be able to do above, then run it in a terminal, or again with --consent to agree", what))
}

// consentFunc asks on the terminal, or agrees when --consent was given.
// Either way the consent text goes to stderr, so what was agreed to is on
// record.
func consentFunc(a *app, given bool) extension.ConsentFunc {
	return func(ctx context.Context, p extension.ConsentPrompt) (bool, error) {
		for _, l := range p.Lines {
			fmt.Fprintln(a.Err, extension.Printable(l))
		}
		if given {
			fmt.Fprintln(a.Err, "Consent given with --consent.")
			return true, nil
		}
		if !isTerminal(a.In) {
			return false, errNeedsConsent(strings.ToLower(p.Action) + " " + extension.Printable(p.Extension.Manifest.Name))
		}
		fmt.Fprint(a.Err, "\nDo you want to continue? [y/N]: ")
		answer, err := readLine(ctx, a.In)
		if err != nil {
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(answer))
		return a == "y" || a == "yes", nil
	}
}

// readLine reads one line from r, giving up when ctx ends.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
		ch <- result{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		return res.line, res.err
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
