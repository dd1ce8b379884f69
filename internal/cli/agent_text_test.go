package cli

import (
	"strings"
	"testing"
)

// TestCodeStartLine: the wait for a language server's first start after
// an edit is a status line on a terminal, cleared when the check is over
// so that the tool's line takes its place, and one line elsewhere, with
// nothing when it ends; the names are made printable.
func TestCodeStartLine(t *testing.T) {
	for _, c := range []struct {
		name       string
		terminal   bool
		rel        string
		shown, end string
	}{
		{"terminal", true, "a.go", "\r\x1b[K  ✎ checking a.go with gopls (starting it)…", "\r\x1b[K"},
		{"not a terminal", false, "a.go", "  ✎ checking a.go with gopls (starting it)…\n", ""},
		{"a name with an escape", false, "a\x1b[2J.go", "  ✎ checking a\\x1b[2J.go with gopls (starting it)…\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			done := codeStartLine(&b, c.terminal)(c.rel, "gopls")
			if b.String() != c.shown {
				t.Errorf("shown %q, want %q", b.String(), c.shown)
			}
			b.Reset()
			if done != nil {
				done()
			}
			if b.String() != c.end {
				t.Errorf("at the end %q, want %q", b.String(), c.end)
			}
		})
	}
}
