package cli

import (
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
and replace it when something changed, showing the version change. An update
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
