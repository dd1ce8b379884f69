package extswitch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// UpdatePins pins, for Store.Update (UpdateRequest.Packages), the
// packages a new version of a switched extension has its package-runner
// servers run, from the registry, so that the update asks once and
// shows what will run. Asked for apart, after the new files, the pins
// were shown with the old ones, and a refusal of the second question
// left the new files agreed to with pins their manifest no longer asks
// for, so that their servers were not served. It keeps the plan, and
// the lock of the extension's trees, until released.
type UpdatePins struct {
	Switch *Switch
	// Pinning, when set, gives what Resolve calls before the first
	// install of the extension name's packages.
	Pinning func(name string) func()
	// Name, Old and Plan are set by Resolve: the extension, its pins
	// before the update, and the new ones (nil when it pinned nothing).
	Name string
	Old  map[string]extension.Pin
	Plan *Plan
}

// Resolve pins the packages of staged, the new version, when the
// extension is switched (old its choice); an extension Gemini CLI runs
// pins nothing.
func (u *UpdatePins) Resolve(ctx context.Context, staged *extension.Extension, old extension.ServerChoice) (extension.PackageUpdate, error) {
	if !old.Switched {
		return extension.PackageUpdate{}, nil
	}
	var pinning func()
	if u.Pinning != nil {
		pinning = u.Pinning(staged.Manifest.Name)
	}
	plan, err := u.Switch.Resolve(ctx, staged, old, old.InstallScripts, true, pinning)
	if err != nil {
		return extension.PackageUpdate{}, fmt.Errorf("its servers' packages could not be pinned: %w", err)
	}
	u.Name, u.Old, u.Plan = staged.Manifest.Name, old.Packages, plan
	return extension.PackageUpdate{Changed: plan.Changed, Pins: plan.Pins, Lines: plan.Lines}, nil
}

// Release gives the plan back once the update is done, agreed to or not
// (Plan.Release).
func (u *UpdatePins) Release() { u.Plan.Release() }

// Change is what the update did to the pins, as --json's changes say
// it; ok is false when they did not change.
func (u *UpdatePins) Change() (c extension.Change, ok bool) {
	if u.Plan == nil || !u.Plan.Changed {
		return c, false
	}
	what := PinChanges(u.Old, u.Plan.Pins)
	if len(u.Plan.Pins) == 0 {
		what = "no server fetches a package through a package runner any more: the pins are dropped"
	}
	return extension.Change{Area: "packages", What: what}, true
}

// PackagesUpdate is what UpdatePackages did.
type PackagesUpdate struct {
	// Name is the extension's, as its manifest says it.
	Name string
	// Asked: the extension is switched and has package-runner servers,
	// so the registry was asked; Old are its pins before.
	Asked bool
	Old   map[string]extension.Pin
	// Changed: the registry would install other packages now, agreed
	// to and recorded when the call returns no error.
	Changed bool
	// What says what changed once recorded, "" when nothing was.
	What string
	// AgreedErr is why gemkit's copy of the extension as agreed to was
	// not kept after (Switch.KeepAgreed).
	AgreedErr error
}

// UpdatePackages pins again, from the registry, the packages of the
// switched extension name's package-runner servers, when the extension
// itself is up to date (a new version pins them with it: UpdatePins).
// What changed (a version, the packages of a tree) is shown with the
// consent text and asked for as an update is (ask); agreed, the new
// pins and the consent to the extension as it is now are recorded, and
// gemkit mcp runs the new trees from its next start of each server.
// Nothing new asks nothing. pinning, when set, gives what is called
// before the first install.
func (s *Switch) UpdatePackages(ctx context.Context, name string, ask extension.ConsentFunc, pinning func(name string) func()) (PackagesUpdate, error) {
	var u PackagesUpdate
	in, err := s.Store.Get(name)
	if err != nil || in.Extension == nil {
		return u, err
	}
	ext := in.Extension
	name = ext.Manifest.Name
	old, err := s.Store.ServerChoice(name)
	if err != nil || !old.Switched || len(RunnerServers(ext, s.Store.Workspace())) == 0 {
		return u, err
	}
	u.Name, u.Asked, u.Old = name, true, old.Packages
	var before func()
	if pinning != nil {
		before = pinning(name)
	}
	plan, err := s.Resolve(ctx, ext, old, old.InstallScripts, true, before)
	if err != nil {
		return u, fmt.Errorf("its servers' packages were not updated: %w", err)
	}
	defer plan.Release()
	if !plan.Changed {
		return u, nil
	}
	u.Changed = true
	state, err := s.Store.Consent(ext)
	if err != nil {
		return u, err
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
		return u, err
	}
	if !ok {
		return u, fmt.Errorf("its servers' packages were not updated: %w", extension.ErrConsentRefused)
	}
	if err := s.Store.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Packages = plan.Pins }); err != nil {
		return u, err
	}
	u.What = PinChanges(old.Packages, plan.Pins)
	if err := s.Store.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return u, err
	}
	u.AgreedErr = s.KeepAgreed(ctx, ext)
	return u, nil
}

// PinList says pins in a line: each server's package and version.
func PinList(pins map[string]extension.Pin) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(pins)) {
		parts = append(parts, fmt.Sprintf("%s %s %s", s, pins[s].Package, pins[s].Version))
	}
	return extension.Printable(strings.Join(parts, ", "))
}

// PinChanges says what changed from the pins was to now, per server.
func PinChanges(was, now map[string]extension.Pin) string {
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
