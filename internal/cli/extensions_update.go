package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
)

func newExtUpdateCmd(a *app) *cobra.Command {
	var all, consent, asJSON bool
	cmd := &cobra.Command{
		Use:   "update <name>... | --all",
		Short: "Update extensions from the source they were installed from",
		Long: `Fetch each extension again from its source (git URL and ref, or local folder)
and replace it when something changed, showing the version change. The
packages a switched extension's package-runner servers run (npx -y pkg, ...)
are resolved again from the registry; a new version, or other packages, are
shown and asked for as a change of the extension is, and run only once agreed. An update
that changes the extension's files asks for consent again, as an install does:
your consent covers its code as well as its permissions, and the question shows
what changed (permissions, tools, MCP servers, files). --consent agrees without
asking. Run by an agent's shell, the update goes ahead only once you type the
extension's name on the terminal, as for consent --grant.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errors.New("name the extensions to update, or pass --all")
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			names := args
			if all {
				list, err := st.List()
				if err != nil {
					return err
				}
				for _, in := range list {
					names = append(names, in.Name)
				}
			}
			interactive := isTerminal(a.In)
			var results []*extension.UpdateResult
			var failed []string
			for _, name := range names {
				res, err := st.Update(cmd.Context(), name, extension.UpdateRequest{
					Consent: consentFunc(a, consent), Progress: a.Err, Interactive: interactive,
				})
				if err != nil {
					var nc *needsConsentError
					if errors.As(err, &nc) {
						// The refusal for want of consent names the
						// update itself.
						fmt.Fprintf(a.Err, "gemkit: %v\n", nc)
					} else {
						fmt.Fprintf(a.Err, "gemkit: update %s: %v\n", name, err)
					}
					failed = append(failed, name)
					continue
				}
				results = append(results, res)
				if !asJSON {
					fmt.Fprintln(a.Out, extension.Printable(updateLine(res)))
				}
				if !res.UpToDate {
					if err := keepSwitched(a, st, res.Name); err != nil {
						fmt.Fprintf(a.Err, "gemkit: %v\n", err)
					}
					// What the sandbox refused its servers was the old
					// version's.
					if err := forgetRefusals(res.Name); err != nil {
						fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", res.Name, err)
					}
				}
				// The registry is asked again for the packages its
				// package-runner servers run, whether or not the
				// extension itself changed.
				if err := updatePackages(cmd.Context(), a, st, res.Name, consentFunc(a, consent), asJSON); err != nil {
					var nc *needsConsentError
					if errors.As(err, &nc) {
						fmt.Fprintf(a.Err, "gemkit: %v\n", nc)
					} else {
						fmt.Fprintf(a.Err, "gemkit: update %s: %v\n", res.Name, err)
					}
					failed = append(failed, name)
				}
			}
			if asJSON {
				if results == nil {
					results = []*extension.UpdateResult{}
				}
				if err := writeJSON(a.Out, results); err != nil {
					return err
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("could not update %s", strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "update every installed extension")
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the new version (its permissions and files) without being asked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func updateLine(r *extension.UpdateResult) string {
	switch {
	case r.Linked:
		return fmt.Sprintf("%s %s is linked to its folder and always current (when its files change, `gemkit extensions consent %s --grant` agrees to them again)", r.Name, r.OldVersion, r.Name)
	case r.UpToDate:
		return fmt.Sprintf("%s %s is up to date", r.Name, r.OldVersion)
	case r.OldVersion == r.NewVersion:
		return fmt.Sprintf("Updated %s %s (same version, new content)", r.Name, r.NewVersion)
	}
	return fmt.Sprintf("Updated %s %s → %s", r.Name, r.OldVersion, r.NewVersion)
}

// updatePackages pins again, from the registry, the packages of the
// switched extension name's package-runner servers. What changed (a
// version, the packages of a tree) is shown with the consent text and
// asked for as an update is (ask); agreed, the new pins and the consent
// to the extension as it is now are recorded, and gemkit mcp runs the
// new trees from its next start of each server. Nothing new asks
// nothing.
func updatePackages(ctx context.Context, a *app, st *extension.Store, name string, ask extension.ConsentFunc, quiet bool) error {
	in, err := st.Get(name)
	if err != nil || in.Extension == nil {
		return err
	}
	ext := in.Extension
	name = ext.Manifest.Name
	old, err := st.ServerChoice(name)
	if err != nil || !old.Switched || len(runnerServers(ext, st.Workspace())) == 0 {
		return err
	}
	plan, err := resolvePackages(ctx, a, st, ext, old, old.InstallScripts, true)
	if err != nil {
		return fmt.Errorf("its servers' packages were not updated: %w", err)
	}
	defer plan.release(a, st, name)
	if !plan.changed {
		if !quiet {
			fmt.Fprintf(a.Out, "%s's servers' packages are up to date: %s\n", extension.Printable(name), pinList(old.Packages))
		}
		return nil
	}
	state, err := st.Consent(ext)
	if err != nil {
		return err
	}
	next := old
	next.Packages = plan.pins
	lines := extension.ConsentTextWith(ext, "Updating the packages of", next)
	if state.Notice != "" {
		lines = append([]string{state.Notice, ""}, lines...)
	}
	lines = append(lines, "", "What changed in its servers' packages since you agreed:")
	for _, l := range plan.lines {
		lines = append(lines, "  "+l)
	}
	ok, err := ask(ctx, extension.ConsentPrompt{Action: "Update", Extension: ext, Lines: lines})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("its servers' packages were not updated: %w", extension.ErrConsentRefused)
	}
	if err := st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Packages = plan.pins }); err != nil {
		return err
	}
	if err := st.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(a.Out, "Updated %s's servers' packages: %s; gemkit mcp runs them from the next start of each server.\n", extension.Printable(name), pinChanges(old.Packages, plan.pins))
	}
	return nil
}

// pinList says pins in a line: each server's package and version.
func pinList(pins map[string]extension.Pin) string {
	var parts []string
	for _, s := range sortedPins(pins) {
		parts = append(parts, fmt.Sprintf("%s %s %s", s, pins[s].Package, pins[s].Version))
	}
	return extension.Printable(strings.Join(parts, ", "))
}

// pinChanges says what changed from the pins was to now, per server.
func pinChanges(was, now map[string]extension.Pin) string {
	var parts []string
	for _, s := range sortedPins(now) {
		p, q := was[s], now[s]
		switch {
		case p.Version == "":
			parts = append(parts, fmt.Sprintf("%s %s %s", s, q.Package, q.Version))
		case p.Version != q.Version:
			parts = append(parts, fmt.Sprintf("%s %s %s → %s", s, q.Package, p.Version, q.Version))
		default:
			parts = append(parts, fmt.Sprintf("%s %s %s (other packages in its tree)", s, q.Package, q.Version))
		}
	}
	return extension.Printable(strings.Join(parts, ", "))
}
