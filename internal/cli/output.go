package cli

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// writeJSON prints v as indented JSON for scripts. Every command's --json
// goes through it, so all agree on the form: two-space indent and no HTML
// escaping (an & stays an &, not \u0026).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine prints v as one line of JSON, escaped as [writeJSON] does,
// for streams of events that scripts read a line at a time.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printableWriter passes text through extension.PrintableText, so that
// what a manifest says cannot reach the terminal as escape sequences.
// JSON output needs no such care: encoding/json escapes control
// characters itself.
type printableWriter struct{ w io.Writer }

func (p printableWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, extension.PrintableText(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
