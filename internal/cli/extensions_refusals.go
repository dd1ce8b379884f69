package cli

import (
	"fmt"
	"io"

	"github.com/gemkit/gemkit/internal/extmcp"
)

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
