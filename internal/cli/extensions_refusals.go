package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/extmcp"
)

// refusalFindings are doctor's notes on what the sandbox refused an
// extension's servers lately: one per start of a server, each host
// once, with one command for what it likely needs.
func refusalFindings(name string, rps []extmcp.Report) []finding {
	var fs []finding
	for _, rp := range rps {
		lines := rp.Lines()
		fix := rp.Allow()
		if fix != "" {
			fix = "`" + fix + "` allows what it likely needs (what servers do in the background left out)"
		}
		fs = append(fs, finding{Level: "note", Extension: name, Message: strings.Join(lines, "\n      - "), Fix: fix})
	}
	return fs
}

// writeRefusals writes describe's lines on what the sandbox refused the
// servers lately: the last three starts' reports.
func writeRefusals(w io.Writer, rps []extmcp.Report) {
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
