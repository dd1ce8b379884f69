package extswitch

import (
	"context"
	"fmt"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// Agreement is what the person agrees to in an extension as it is now
// (gemkit extensions consent): its choice, with the packages its
// package-runner servers fetch pinned when it is switched and the
// person grants, as the switch pins them (what is agreed to is what
// will run); where consent to it stands; and the links a copy made
// absolute, which a grant makes relative again. It holds the lock of
// the extension's trees until released.
type Agreement struct {
	Choice extension.ServerChoice
	// Plan is the packages pinned (nil when none were).
	Plan  *Plan
	State extension.ConsentState
	Links []extension.CopiedLink
}

// Agreement reads what agreeing to ext as it is now would record; with
// grant, a switched extension's packages are pinned first (pinning,
// when set, is called before the first install).
func (s *Switch) Agreement(ctx context.Context, ext *extension.Extension, grant bool, pinning func()) (*Agreement, error) {
	choice, err := s.Store.ServerChoice(ext.Manifest.Name)
	if err != nil {
		return nil, err
	}
	ag := &Agreement{}
	if grant && choice.Switched {
		if ag.Plan, err = s.Resolve(ctx, ext, choice, choice.InstallScripts, false, pinning); err != nil {
			return nil, fmt.Errorf("consent not given: %w", err)
		}
		choice.Packages = ag.Plan.Pins
	}
	ag.Choice = choice
	if ag.State, err = s.Store.Consent(ext); err != nil {
		ag.Release()
		return nil, err
	}
	if ag.Plan != nil && ag.Plan.Changed {
		ag.State.Granted = false
	}
	// The check every start makes: the links a copy made absolute are
	// no file consent cannot bind.
	ag.Links = extmcp.CopiedLinks(s.Store, ext, ag.State)
	return ag, nil
}

// Release gives back the plan of the packages pinned (Plan.Release).
func (ag *Agreement) Release() { ag.Plan.Release() }

// Agree records the person's consent to ext as ag read it: the new
// pins, the links made relative again (a Refused when consent still
// cannot bind the files), the consent, and gemkit's copy of the
// extension as agreed to, whose failure is agreedErr.
func (s *Switch) Agree(ctx context.Context, ext *extension.Extension, ag *Agreement) (agreedErr, err error) {
	name := ext.Manifest.Name
	if ag.Plan != nil && ag.Plan.Changed {
		if err := s.Store.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Packages = ag.Plan.Pins }); err != nil {
			return nil, err
		}
	}
	state := ag.State
	if len(ag.Links) > 0 {
		if state, err = Relinked(s.Store, ext, ag.Links); err != nil {
			return nil, &Refused{fmt.Errorf("consent not given: %w", err)}
		}
	}
	if err := s.Store.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return nil, err
	}
	return s.KeepAgreed(ctx, ext), nil
}
