package extswitch

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// An extension's policies/*.toml, as Gemini CLI 0.61 loads them
// (extension.Policies): rules, which change what Gemini CLI decides for
// a call (deny it, or ask the person first) and run nothing, and safety
// checkers. An in-process checker is Gemini CLI's own code; an external
// one names a program for Gemini CLI to start on each call it covers
// (CheckerRunner.runExternalChecker in packages/core/src/safety/
// checker-runner.ts: spawn, the call as JSON on its stdin, its verdict
// on its stdout, in the session's folder, with the person's whole
// environment, 30 s at most). Gemini CLI 0.61 resolves a name only among
// its own external checkers (CheckerRegistry.resolveExternal, safety/
// registry.ts), of which there are none, and denies the call instead;
// it offers no way to start one elsewhere, in gemkit's sandbox as the
// switch runs hooks. So a switched extension that brings one is held in
// Gemini CLI, as is one whose policies gemkit cannot read as Gemini CLI
// will: what the switch takes runs in gemkit's sandbox, and Gemini CLI
// runs nothing of it, whatever its version does with such a checker.

// PolicyHoldWhy says why the switched extension ext is held in Gemini
// CLI for its policies, and what ends the hold; "" when nothing.
func PolicyHoldWhy(ext *extension.Extension) (why, fix string) {
	p := ext.Policies()
	name := extension.Printable(ext.Manifest.Name)
	off := "give it back to Gemini CLI, unconfined: gemkit extensions sandbox " + name + " --off"
	if len(p.Unsure) > 0 {
		u := p.Unsure[0]
		if u.Breaks {
			return fmt.Sprintf("its %s can break Gemini CLI's reading of policies (%s)", u.File, u.Why),
				"remove " + filepath.Join(ext.Dir, filepath.FromSlash(u.File)) + " or the extension (gemkit extensions uninstall " + name + "): Gemini CLI reads every installed extension's policies, enabled or not, and the hold does not keep it from this file"
		}
		return fmt.Sprintf("gemkit cannot read its %s as Gemini CLI will (%s)", u.File, u.Why),
			"repair or remove " + filepath.Join(ext.Dir, filepath.FromSlash(u.File)) + ", then agree again: gemkit extensions consent " + name + " --grant; or " + off
	}
	if ex := p.External(); len(ex) > 0 {
		c := ex[0]
		return fmt.Sprintf("its %s names an external safety checker, %s, a program for Gemini CLI to start with your rights: Gemini CLI 0.61 starts none (it knows no external checker by name, and denies the calls it covers), and has no way to start one in gemkit's sandbox",
				c.File, extension.Printable(c.Name)),
			"ask its author to drop the external checker, then agree again: gemkit extensions consent " + name + " --grant; or " + off
	}
	return "", ""
}

// policyHoldWords say that name is held for its policies, why, and how
// the hold ends.
func policyHoldWords(name, why, fix string) string {
	return fmt.Sprintf("%s is switched to gemkit, but %s: gemkit holds it in Gemini CLI (disabled in its extension enablement), so that Gemini CLI runs none of it; what the switch took runs in gemkit's sandbox all the same. To end the hold: %s",
		extension.Printable(name), why, fix)
}

// holdForPolicies holds in, switched to gemkit, in its host when its
// policies need it (PolicyHoldWhy), or keeps it held for them; it
// returns why and what ends the hold, "" when they do not need it.
func (s *Switch) holdForPolicies(in *extension.Installed) (why, fix string, err error) {
	if why, fix = PolicyHoldWhy(in.Extension); why == "" {
		return "", "", nil
	}
	m := in.Extension.Manifest
	if _, err := s.Host.Hold(in.Name, []string{m.Name}, why, fix); err != nil {
		return "", "", err
	}
	if err := s.excludeHeld(in.Name, m); err != nil {
		return "", "", err
	}
	return why, fix, nil
}

// keepPolicyHold holds the extension name, when it is switched, for its
// policies, on agreeing to it (the switch, consent --grant): agreeing
// ends a hold of a change, not one of what its policies bring. It
// returns the words that say so, "" when it does not hold it.
func (s *Switch) keepPolicyHold(name string) (string, error) {
	in, err := s.Store.Get(name)
	if err != nil || in.Extension == nil {
		return "", nil
	}
	choices, err := s.Store.ServerChoices()
	if err != nil {
		return "", err
	}
	if _, ok := SwitchedChoice(in, choices); !ok {
		return "", nil
	}
	why, fix, err := s.holdForPolicies(in)
	if why == "" || err != nil {
		return "", err
	}
	return policyHoldWords(in.Extension.Manifest.Name, why, fix), nil
}

// policyParts are the external checkers of ext as parts that run code:
// Gemini CLI 0.61 starts none of them.
func policyParts(p extension.Policies) []CodePart {
	var out []CodePart
	for _, c := range p.External() {
		out = append(out, CodePart{Kind: "safety checker", Name: c.Name + " (" + c.File + ")", Where: WhereOff,
			Why: "an external checker: Gemini CLI 0.61 starts no program for it, and denies the calls it covers instead"})
	}
	return out
}

// PolicyFindings are doctor's words on the policies of in: what gemkit
// cannot read as Gemini CLI will, what Gemini CLI skips or drops, the
// external checkers, and what the rest adds.
func PolicyFindings(in *extension.Installed, switched bool) []Finding {
	if in.Extension == nil {
		return nil
	}
	p := in.Extension.Policies()
	name := in.Extension.Manifest.Name
	var fs []Finding
	for _, u := range p.Unsure {
		if u.Breaks {
			// ExtensionManager._buildExtension reads the policies of
			// every installed extension, active or not.
			fs = append(fs, Finding{Level: "error", Extension: name,
				Message: u.File + " can break Gemini CLI, whether the extension is enabled, held or not: " + u.Why + " (your policies, your admin's and Gemini CLI's own defaults among them; a session may fail outright)",
				Fix:     "remove " + filepath.Join(in.Extension.Dir, filepath.FromSlash(u.File)) + ", or the extension: gemkit extensions uninstall " + name})
			continue
		}
		msg := "gemkit cannot read " + u.File + " as Gemini CLI will: " + u.Why
		if switched {
			msg += "; switched, gemkit holds it in Gemini CLI"
		} else {
			msg += "; Gemini CLI runs it unconfined, whatever it brings"
		}
		fs = append(fs, Finding{Level: "warning", Extension: name, Message: msg,
			Fix: "repair or remove " + filepath.Join(in.Extension.Dir, filepath.FromSlash(u.File))})
	}
	for _, s := range p.Skipped {
		fs = append(fs, Finding{Level: "warning", Extension: name, Message: "Gemini CLI skips " + s.File + ", saying so only in its debug log: " + s.Why,
			Fix: "correct " + filepath.Join(in.Extension.Dir, filepath.FromSlash(s.File))})
	}
	for _, d := range p.Dropped {
		fs = append(fs, Finding{Level: "note", Extension: name, Message: "Gemini CLI drops " + d})
	}
	for _, c := range p.External() {
		fs = append(fs, Finding{Level: "warning", Extension: name, Message: "its policies name" + strings.TrimPrefix(c.Words(), "names")})
	}
	if n, k := len(p.Rules), len(p.Checkers)-len(p.External()); n+k > 0 {
		fs = append(fs, Finding{Level: "note", Extension: name,
			Message: fmt.Sprintf("its policies/*.toml add %d rule(s) and %d of Gemini CLI's own checker(s) to Gemini CLI's policy, %s: they change what Gemini CLI decides for a call, and run nothing", n, k, extension.PolicyTierWords),
			Fix:     "gemkit extensions describe " + name + " lists them"})
	}
	return fs
}
