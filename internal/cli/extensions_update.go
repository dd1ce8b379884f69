package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

func newExtUpdateCmd(a *app) *cobra.Command {
	var all, consent, asJSON bool
	var ref string
	cmd := &cobra.Command{
		Use:   "update <name>... | --all",
		Short: "Update extensions from the source they were installed from",
		Long: `Fetch each extension again from its source (git URL and ref, or local folder)
and replace it when something changed, showing the version change. The
packages a switched extension's package-runner servers run (npx -y pkg, ...)
are resolved again from the registry, for the new version's manifest, before
anything is asked; a new version, or other packages, are shown and asked for
with the rest of the update, in one question, and run only once agreed. An
update that changes the extension's files asks for consent again, as an
install does: your consent covers its code as well as its permissions, and the
question shows what changed (permissions, tools, MCP servers, files,
packages). Refused, nothing is changed: the old files and pins stay, and run
as before. --consent agrees without asking. Run by an agent's shell, the
update goes ahead only once you type the extension's name on the terminal, as
for consent --grant.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return fmt.Errorf("--all updates every extension: name the extensions to update (%s) or pass --all, not both", strings.Join(args, " "))
			case !all && len(args) == 0:
				return errors.New("name the extensions to update, or pass --all")
			case ref != "" && (all || len(args) != 1):
				return errors.New("--ref moves one extension to another branch, tag or commit: name just that one")
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
			req := extension.UpdateRequest{Consent: consentFunc(a, consent), Progress: a.Err, Interactive: isTerminal(a.In), Ref: ref}
			var results []*extension.UpdateResult
			var failed []string
			// noConsent: every update that failed failed for want of
			// consent, a no (ExitNo), not an error.
			noConsent := true
			for _, name := range names {
				res, err := updateOne(cmd.Context(), a, st, name, req, asJSON)
				if res != nil {
					results = append(results, res)
				}
				if err != nil {
					failed = append(failed, name)
					noConsent = noConsent && consentNotGiven(err)
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
				err := fmt.Errorf("could not update %s", strings.Join(failed, ", "))
				if noConsent {
					return withExitCode(ExitNo, err)
				}
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "update every installed extension")
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the new version (its permissions and files) without being asked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&ref, "ref", "", "move an extension installed from git to this branch, tag or commit (which later updates then follow)")
	return cmd
}

// updateOne updates the extension name, says so, and keeps what follows
// it (its switch, agreed servers, pins) in step; up to date, its packages
// are asked for again. res is nil when the update failed; err, told on
// a.Err, is why it or its packages' update failed.
func updateOne(ctx context.Context, a *app, st *extension.Store, name string, req extension.UpdateRequest, asJSON bool) (*extension.UpdateResult, error) {
	pins := &extswitch.UpdatePins{Switch: a.switcher(st), Pinning: func(n string) func() { return pinning(a, n) }}
	req.Packages = pins.Resolve
	res, err := st.Update(ctx, name, req)
	// The trees pinned for a refused or failed update go, and those the
	// new pins replaced.
	pins.Release()
	if err != nil {
		return nil, tellUpdateFailed(a, name, err)
	}
	if c, ok := pins.Change(); ok {
		res.Changes = append(res.Changes, c)
	}
	if !asJSON {
		fmt.Fprintln(a.Out, extension.Printable(updateLine(res)))
		tellPins(a, pins)
	}
	if !res.UpToDate && !res.Linked {
		if in, err := st.Get(res.Name); err == nil {
			tellToolsStopped(a.Err, in)
		}
	}
	if !res.UpToDate {
		if err := keepSwitched(a, st, res.Name); err != nil {
			fmt.Fprintf(a.Err, "gemkit: %v\n", err)
		}
		keepAgreedNamed(ctx, a, st, res.Name)
		// What the sandbox refused its servers was the old version's.
		if err := extswitch.ForgetRefusals(res.Name); err != nil {
			fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", res.Name, err)
		}
		// The packages of its new version were pinned and agreed to
		// with it (extswitch.UpdatePins).
		return res, nil
	}
	// Up to date, it may still have other packages to run: the registry
	// is asked again for them.
	what, err := updatePackages(ctx, a, st, res.Name, req.Consent, asJSON)
	if what != "" {
		// Its packages were updated: in --json, a change of the
		// extension's.
		res.UpToDate = false
		res.Changes = append(res.Changes, extension.Change{Area: "packages", What: what})
	}
	if err != nil {
		return res, tellUpdateFailed(a, res.Name, err)
	}
	return res, nil
}

// tellUpdateFailed tells why the update of name failed, and returns err.
// A refusal for want of consent names the update itself.
func tellUpdateFailed(a *app, name string, err error) error {
	if nc := (*needsConsentError)(nil); errors.As(err, &nc) {
		fmt.Fprintf(a.Err, "gemkit: %v\n", nc)
	} else {
		fmt.Fprintf(a.Err, "gemkit: update %s: %v\n", name, err)
	}
	return err
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

// tellPins says, after an update that went ahead, what its pins came
// to (extswitch.UpdatePins).
func tellPins(a *app, u *extswitch.UpdatePins) {
	switch {
	case u.Plan == nil || len(u.Plan.Pins) == 0 && !u.Plan.Changed:
	case len(u.Plan.Pins) == 0:
		fmt.Fprintf(a.Out, "%s's servers no longer fetch packages through a package runner: their pins are dropped.\n", extension.Printable(u.Name))
	case u.Plan.Changed:
		fmt.Fprintf(a.Out, "Updated %s's servers' packages: %s; gemkit mcp runs them from the next start of each server.\n", extension.Printable(u.Name), extswitch.PinChanges(u.Old, u.Plan.Pins))
	default:
		fmt.Fprintf(a.Out, "%s's servers' packages are up to date: %s\n", extension.Printable(u.Name), extswitch.PinList(u.Plan.Pins))
	}
}

// updatePackages pins again the packages of the switched extension name
// when it is itself up to date (extswitch.Switch.UpdatePackages), saying
// what it did unless quiet. what says what changed once recorded, ""
// when nothing was.
func updatePackages(ctx context.Context, a *app, st *extension.Store, name string, ask extension.ConsentFunc, quiet bool) (what string, err error) {
	u, err := a.switcher(st).UpdatePackages(ctx, name, ask, func(n string) func() { return pinning(a, n) })
	switch {
	case err != nil || !u.Asked:
	case !u.Changed:
		if !quiet {
			fmt.Fprintf(a.Out, "%s's servers' packages are up to date: %s\n", extension.Printable(u.Name), extswitch.PinList(u.Old))
		}
	default:
		tellAgreedErr(a, u.AgreedErr)
		if !quiet {
			fmt.Fprintf(a.Out, "Updated %s's servers' packages: %s; gemkit mcp runs them from the next start of each server.\n", extension.Printable(u.Name), u.What)
		}
	}
	return u.What, err
}
