package extview

import (
	"fmt"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// Sections of `gemkit extensions describe` that are only an item's data
// put in words; internal/cli writes the rest.

// WritePolicies writes describe's section on the extension's
// policies/*.toml; what they mean for the switch (a hold, doctor's
// findings) is extswitch's.
func WritePolicies(w io.Writer, p extension.Policies) {
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

// WriteRefusals writes describe's lines on what the sandbox refused the
// servers lately: the last three starts' reports.
func WriteRefusals(w io.Writer, rps []extmcp.Report) {
	if len(rps) == 0 {
		return
	}
	fmt.Fprintln(w, "  Refused lately in gemkit's sandbox:")
	for _, rp := range rps[max(0, len(rps)-3):] {
		lines := rp.Lines()
		fmt.Fprintf(w, "      %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "        - %s\n", l)
		}
		if a := rp.Allow(); a != "" {
			fmt.Fprintf(w, "        to allow what it likely needs: %s\n", a)
		}
	}
}

// WriteCodeParts writes describe's section on where the extension's
// code runs.
func WriteCodeParts(w io.Writer, parts []extswitch.CodePart) {
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere its code runs\n")
	for _, p := range parts {
		fmt.Fprintf(w, "  %s\n", extswitch.PartWords(p))
	}
}
