package extswitch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/progsearch"
)

// checkServable reads the consent state of the extension as it is and
// says now what would keep gemkit mcp from serving a server, switching
// nothing: the servers stay the host's rather than vanish from it. The
// links a copy made absolute are what the switch itself repairs.
func (p *Prepared) checkServable() error {
	s, ext := p.sw, p.Ext
	var err error
	if p.State, err = s.Store.Consent(ext); err != nil {
		return err
	}
	p.Links = extmcp.CopiedLinks(s.Store, ext, p.State)
	var cannot []string
	if w := NotLoaded(p.in); w != "" {
		cannot = append(cannot, w)
	}
	if err := extension.WithoutCopied(p.State.Unbound, p.Links); err != nil {
		cannot = append(cannot, err.Error())
	}
	// A package-runner line that cannot be pinned, or that fetches from
	// a registry gemkit pins nothing of, is never started by gemkit
	// mcp: switched, nothing would start it. Its program is not looked
	// for, which would not help.
	never := map[string]bool{}
	var unpinned []string
	for _, rs := range p.Plan.Unpinnable {
		unpinned = append(unpinned, cannotPin(ext.Manifest.Name, rs).Message)
		never[rs.Name] = true
	}
	var missing []string // the programs not found, which the person installs
	notFound := 0        // the servers whose program was not found
	for _, srv := range extension.SandboxedServers(ext.Manifest) {
		if never[srv] || ext.IsPlugin() {
			// An Agent Plugins plugin's servers stay nobody else's: one
			// that cannot start is said when gemkit mcp starts it, and
			// the others are served all the same (§7.2.2(5), §11.3).
			continue
		}
		// Checked for no workspace in particular (the extension's own
		// folder stands for one): gemkit mcp runs wherever its client
		// starts it.
		if err := extmcp.Check(ext, srv, p.W, p.Handed, p.Plan.Pins, ext.Dir, s.Environ); err != nil {
			cannot = append(cannot, fmt.Sprintf("its MCP server %s would not start: %v", extension.Printable(srv), err))
			var nf *progsearch.NotFoundError
			if errors.As(err, &nf) {
				notFound++
				if pr := extension.Printable(nf.Program); !slices.Contains(missing, pr) {
					missing = append(missing, pr)
				}
			}
		}
	}
	cannot = append(cannot, unpinned...)
	if len(cannot) == 0 {
		return nil
	}
	for i, c := range cannot {
		cannot[i] = sentence(c)
	}
	next := nextStep(missing, len(cannot) > notFound, p.req.Command)
	if len(unpinned) == len(cannot) {
		// Nothing the person can do here: the lines are the author's.
		next = "Those command lines are the extension author's to change (to npx -y PACKAGE, which gemkit pins); until then its servers stay Gemini CLI's."
	}
	return refuse("not switched: gemkit mcp could not serve %s's MCP servers, so Gemini CLI goes on starting them itself, as before. %s. %s",
		extension.Printable(ext.Manifest.Name), strings.Join(cannot, ". "), next)
}

// nextStep says what the person does after a refused switch: install
// the programs missing (or put them on PATH), deal with what else was
// said (rest), then run command again.
func nextStep(missing []string, rest bool, command string) string {
	if len(missing) == 0 {
		return "Once that is fixed, run `" + command + "` again."
	}
	it := "them"
	if len(missing) == 1 {
		it = "it"
	}
	s := "Install " + JoinAnd(missing) + ", or put " + it + " on PATH"
	if rest {
		return s + ", and deal with what else is said above; then run `" + command + "` again."
	}
	return s + ", then run `" + command + "` again."
}

// Next is the extension's choice once switched: what the person agrees
// to.
func (p *Prepared) Next() extension.ServerChoice {
	next := p.Old
	next.Switched, next.Widening, next.HookWidening = true, p.W, p.HW
	next.Packages, next.InstallScripts, next.Handed = p.Plan.Pins, p.Scripts, p.Handed
	next.Hooks = nil
	for _, h := range p.Parts.Hooks {
		if h.Switchable() {
			next.Hooks = append(next.Hooks, extension.SwitchedHook{Label: h.Label, Event: h.Event, Key: h.Key, Command: h.Def.Command})
		}
	}
	return next
}

// NeedsAgreement reports whether the person is to agree: switching
// alone narrows what the servers and hooks can do; agreeing is asked
// for when there is no consent to the extension as it is now, or when
// they get more than they had, other packages among it, or when links
// are repaired.
func (p *Prepared) NeedsAgreement() bool {
	old := p.Old
	return !p.State.Granted || Widens(old.Widening, p.W) || hooksWiden(old.HookWidening, p.HW) || p.Plan.Changed || p.Scripts && !old.InstallScripts || len(p.Links) > 0 ||
		!slices.Equal(old.Handed, p.Handed)
}

// Relink makes the links a copy made absolute relative again, once the
// person agreed; it returns how many.
func (p *Prepared) Relink() (int, error) {
	if len(p.Links) == 0 {
		return 0, nil
	}
	var err error
	if p.State, err = Relinked(p.sw.Store, p.Ext, p.Links); err != nil {
		return 0, refuse("not switched: %w", err)
	}
	return len(p.Links), nil
}

// Relinked makes links relative again and reads where consent to ext
// stands after: an error when consent still cannot bind its files.
func Relinked(st *extension.Store, ext *extension.Extension, links []extension.CopiedLink) (extension.ConsentState, error) {
	if err := extension.RelinkCopied(ext.Dir, links); err != nil {
		return extension.ConsentState{}, fmt.Errorf("making the links of %s relative again: %w", extension.Printable(ext.Manifest.Name), err)
	}
	state, err := st.Consent(ext)
	if err == nil && state.Unbound != nil {
		err = state.Unbound
	}
	return state, err
}

// On is what Commit did.
type On struct {
	// Off are the labels of the hooks the person's settings keep off.
	Off []string
	// AgreedErr is why gemkit's copy of the extension as agreed to
	// could not be made (KeepAgreed).
	AgreedErr error
	// Released is what ending its hold did; Held that it stays held
	// for what its policies bring.
	Released Released
	Held     bool
	// Checks are what listing its stdio servers found.
	Checks []ServedCheck
}

// Commit switches (the host's exclusions and gemkit's choice), records
// the consent the person gave, releases the hold on the extension and
// lists its servers as gemkit mcp does. What it did before a failure is
// in the result all the same.
func (p *Prepared) Commit(ctx context.Context) (On, error) {
	s, name := p.sw, p.Ext.Manifest.Name
	var on On
	res, err := s.Sync(name, p.Parts, func(c *extension.ServerChoice) {
		c.Widening, c.HookWidening = p.W, p.HW
		c.Packages, c.InstallScripts, c.Handed = p.Plan.Pins, p.Scripts, p.Handed
	})
	if err != nil {
		return on, err
	}
	on.Off = res.Off
	if err := s.Store.RecordConsentContent(name, p.State.Hash, p.State.Content); err != nil {
		return on, fmt.Errorf("switched, but your consent was not recorded, so gemkit serves and runs nothing of %s until it is (%w); %s", extension.Printable(name), err, consentHint(name))
	}
	on.AgreedErr = s.KeepAgreed(ctx, p.Ext)
	if on.Released, err = s.ReleaseHold(name); err != nil {
		return on, err
	}
	if in, err := s.Store.Get(name); err == nil {
		holds, _ := s.Store.Holds()
		on.Held = holds[in.Name].Fix != ""
	}
	// Listed as switched: the extension as it is now (its links made
	// relative again, its hold released).
	if in, err := s.Store.Get(name); err == nil && in.Extension != nil {
		on.Checks = s.ListSwitched(ctx, in)
	}
	return on, nil
}

// KeepAgreed makes gemkit's copy of ext as the person just agreed to it
// (extension.Store.KeepAgreedCopy), which gemkit mcp shows its stdio
// servers in place of its folder, so that a start checks nothing of the
// folder; only for an extension that has such servers. It returns why a
// copy could not be made: gemkit mcp then checks the folder at each
// start, as it would without one.
func (s *Switch) KeepAgreed(ctx context.Context, ext *extension.Extension) error {
	if ext == nil || ext.Manifest == nil || len(extension.SandboxedServers(ext.Manifest)) == 0 {
		return nil
	}
	_, err := s.Store.KeepAgreedCopy(ctx, ext)
	return err
}
