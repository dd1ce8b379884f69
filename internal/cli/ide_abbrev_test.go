package cli

import (
	"testing"
	"unicode/utf8"
)

// TestIDEAbbrev: what ide watch and ide status cut to fit a line stays
// valid UTF-8, cut between characters: the ⏎ that stands for a newline
// in a selection was cut inside its bytes and printed as "\xe2\x8f…"
// (ide watch, a three-line selection from Neovim).
func TestIDEAbbrev(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 40, "short"},
		{"abcdef", 4, "abc…"},
		{"func main() {⏎\tfmt.Println(\"hello\")⏎}", 35, "func main() {⏎\tfmt.Println(\"hello\"…"},
		{"ab⏎cd", 4, "ab⏎…"},
		{"ab⏎cd", 5, "ab⏎cd"},
		{"日本語テキスト", 4, "日本語…"},
	} {
		got := ideAbbrev(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("ideAbbrev(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
