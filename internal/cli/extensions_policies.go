package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// An extension's policies/*.toml as describe shows them; what they mean
// for the switch (a hold, doctor's findings) is extswitch's.

// writePolicies writes describe's section on the extension's policies.
func writePolicies(w io.Writer, p extension.Policies) {
	if p.Empty() {
		return
	}
	fmt.Fprintf(w, "\nPolicies (policies/*.toml: %s)\n", strings.Join(p.Files, ", "))
	lines := p.PolicyLines()
	if len(lines) == 0 {
		fmt.Fprintln(w, "  none: its files add no rule and no checker")
	}
	for _, l := range lines {
		if l == "" {
			continue
		}
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// policiesJSON is describe --json's account of the policies.
type policiesJSON struct {
	Files    []string `json:"files"`
	Rules    []string `json:"rules"`
	Checkers []string `json:"checkers"`
	Notes    []string `json:"notes,omitempty"`
}

func policiesOf(p extension.Policies) *policiesJSON {
	if p.Empty() {
		return nil
	}
	j := &policiesJSON{Files: p.Files, Rules: []string{}, Checkers: []string{}}
	for _, r := range p.Rules {
		j.Rules = append(j.Rules, r.Words())
	}
	for _, c := range p.Checkers {
		j.Checkers = append(j.Checkers, c.Words())
	}
	j.Notes = p.Notes()
	return j
}
