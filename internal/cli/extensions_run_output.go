package cli

import (
	"io"

	"github.com/gemkit/gemkit/internal/extension"
)

// writeToolOutput writes what a tool printed. A tool's output is a
// stranger's bytes: on a terminal, escape sequences in it could set the
// clipboard (OSC 52), change the title, move the cursor to erase real
// lines or fake a gemkit status line. So when w is a terminal and raw is
// false, control characters are shown escaped (newlines and tabs kept);
// to a file or pipe, or with --raw, the bytes go out as they are.
func writeToolOutput(w io.Writer, b []byte, raw bool) {
	if raw || !isTerminal(w) {
		_, _ = w.Write(b)
		return
	}
	_, _ = io.WriteString(w, extension.PrintableText(string(b)))
}
