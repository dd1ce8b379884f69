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
