package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
			interactive := isTerminal(a.In)
			var results []*extension.UpdateResult
			var failed []string
			// noConsent: every update that failed failed for want of
			// consent, a no (ExitNo), not an error.
			noConsent := true
			for _, name := range names {
				pins := &updatePins{a: a, st: st}
				res, err := st.Update(cmd.Context(), name, extension.UpdateRequest{
					Consent: consentFunc(a, consent), Progress: a.Err, Interactive: interactive,
					Packages: pins.resolve, Ref: ref,
				})
				// The trees pinned for a refused or failed update go, and
				// those the new pins replaced.
				pins.release()
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
					noConsent = noConsent && consentNotGiven(err)
					continue
				}
				results = append(results, res)
				if c, ok := pins.change(); ok {
					res.Changes = append(res.Changes, c)
				}
				if !asJSON {
					fmt.Fprintln(a.Out, extension.Printable(updateLine(res)))
					pins.tell()
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
					keepAgreedNamed(cmd.Context(), a, st, res.Name)
					// What the sandbox refused its servers was the old
					// version's.
					if err := extswitch.ForgetRefusals(res.Name); err != nil {
						fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", res.Name, err)
					}
					// The packages of its new version were pinned and
					// agreed to with it (updatePins).
					continue
				}
				// Up to date, it may still have other packages to run:
				// the registry is asked again for them.
				what, err := updatePackages(cmd.Context(), a, st, res.Name, consentFunc(a, consent), asJSON)
				if what != "" {
					// Its packages were updated: in --json, a change of
					// the extension's.
					res.UpToDate = false
					res.Changes = append(res.Changes, extension.Change{Area: "packages", What: what})
				}
				if err != nil {
					var nc *needsConsentError
					if errors.As(err, &nc) {
						fmt.Fprintf(a.Err, "gemkit: %v\n", nc)
					} else {
						fmt.Fprintf(a.Err, "gemkit: update %s: %v\n", res.Name, err)
					}
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

// updatePins pins, for Store.Update (UpdateRequest.Packages), the
// packages a new version of a switched extension has its package-runner
// servers run, from the registry, so that the update asks once and
// shows what will run. Asked for apart, after the new files, the pins
// were shown with the old ones, and a refusal of the second question
// left the new files agreed to with pins their manifest no longer asks
// for, so that their servers were not served. It keeps the plan, and
// the lock of the extension's trees, until released.
type updatePins struct {
	a    *app
	st   *extension.Store
	name string
	old  map[string]extension.Pin
	plan *extswitch.Plan
}

// resolve pins the packages of staged, the new version, when the
// extension is switched (old its choice); an extension Gemini CLI runs
// pins nothing.
func (u *updatePins) resolve(ctx context.Context, staged *extension.Extension, old extension.ServerChoice) (extension.PackageUpdate, error) {
	if !old.Switched {
		return extension.PackageUpdate{}, nil
	}
	plan, err := u.a.switcher(u.st).Resolve(ctx, staged, old, old.InstallScripts, true, pinning(u.a, staged.Manifest.Name))
	if err != nil {
		return extension.PackageUpdate{}, fmt.Errorf("its servers' packages could not be pinned: %w", err)
	}
	u.name, u.old, u.plan = staged.Manifest.Name, old.Packages, plan
	return extension.PackageUpdate{Changed: plan.Changed, Pins: plan.Pins, Lines: plan.Lines}, nil
}

// release gives the plan back once the update is done, agreed to or not
// (extswitch.Plan.Release).
func (u *updatePins) release() { u.plan.Release() }

// change is what the update did to the pins, as --json's changes say
// it; ok is false when they did not change.
func (u *updatePins) change() (c extension.Change, ok bool) {
	if u.plan == nil || !u.plan.Changed {
		return c, false
	}
	what := pinChanges(u.old, u.plan.Pins)
	if len(u.plan.Pins) == 0 {
		what = "no server fetches a package through a package runner any more: the pins are dropped"
	}
	return extension.Change{Area: "packages", What: what}, true
}

// tell says, after an update that went ahead, what its pins came to.
func (u *updatePins) tell() {
	switch {
	case u.plan == nil || len(u.plan.Pins) == 0 && !u.plan.Changed:
	case len(u.plan.Pins) == 0:
		fmt.Fprintf(u.a.Out, "%s's servers no longer fetch packages through a package runner: their pins are dropped.\n", extension.Printable(u.name))
	case u.plan.Changed:
		fmt.Fprintf(u.a.Out, "Updated %s's servers' packages: %s; gemkit mcp runs them from the next start of each server.\n", extension.Printable(u.name), pinChanges(u.old, u.plan.Pins))
	default:
		fmt.Fprintf(u.a.Out, "%s's servers' packages are up to date: %s\n", extension.Printable(u.name), pinList(u.plan.Pins))
	}
}

// updatePackages pins again, from the registry, the packages of the
// switched extension name's package-runner servers, when the extension
// itself is up to date (a new version pins them with it: updatePins).
// What changed (a version, the packages of a tree) is shown with the
// consent text and asked for as an update is (ask); agreed, the new
// pins and the consent to the extension as it is now are recorded, and
// gemkit mcp runs the new trees from its next start of each server.
// Nothing new asks nothing. what says what changed once recorded, ""
// when nothing was.
func updatePackages(ctx context.Context, a *app, st *extension.Store, name string, ask extension.ConsentFunc, quiet bool) (what string, err error) {
	in, err := st.Get(name)
	if err != nil || in.Extension == nil {
		return "", err
	}
	ext := in.Extension
	name = ext.Manifest.Name
	old, err := st.ServerChoice(name)
	if err != nil || !old.Switched || len(extswitch.RunnerServers(ext, st.Workspace())) == 0 {
		return "", err
	}
	plan, err := a.switcher(st).Resolve(ctx, ext, old, old.InstallScripts, true, pinning(a, name))
	if err != nil {
		return "", fmt.Errorf("its servers' packages were not updated: %w", err)
	}
	defer plan.Release()
	if !plan.Changed {
		if !quiet {
			fmt.Fprintf(a.Out, "%s's servers' packages are up to date: %s\n", extension.Printable(name), pinList(old.Packages))
		}
		return "", nil
	}
	state, err := st.Consent(ext)
	if err != nil {
		return "", err
	}
	next := old
	next.Packages = plan.Pins
	lines := extension.ConsentTextWith(ext, "Updating the packages of", next)
	if state.Notice != "" {
		lines = append([]string{state.Notice, ""}, lines...)
	}
	lines = append(lines, "", "What changed in its servers' packages since you agreed:")
	for _, l := range plan.Lines {
		lines = append(lines, "  "+l)
	}
	ok, err := ask(ctx, extension.ConsentPrompt{Action: "Update", Extension: ext, Lines: lines})
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("its servers' packages were not updated: %w", extension.ErrConsentRefused)
	}
	if err := st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Packages = plan.Pins }); err != nil {
		return "", err
	}
	what = pinChanges(old.Packages, plan.Pins)
	if err := st.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return what, err
	}
	keepAgreed(ctx, a, st, ext)
	if !quiet {
		fmt.Fprintf(a.Out, "Updated %s's servers' packages: %s; gemkit mcp runs them from the next start of each server.\n", extension.Printable(name), what)
	}
	return what, nil
}

// pinList says pins in a line: each server's package and version.
func pinList(pins map[string]extension.Pin) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(pins)) {
		parts = append(parts, fmt.Sprintf("%s %s %s", s, pins[s].Package, pins[s].Version))
	}
	return extension.Printable(strings.Join(parts, ", "))
}

// pinChanges says what changed from the pins was to now, per server.
func pinChanges(was, now map[string]extension.Pin) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(now)) {
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
