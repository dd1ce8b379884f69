package extension

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s fit to show on one line of a terminal: control
// characters (escape sequences, carriage returns, newlines), bidirectional
// overrides and invalid UTF-8 are written as visible \x.. or \u.... escapes.
// Manifests come from strangers, and what gemkit prints from them (most of
// all the consent text) must not be able to move the cursor, recolour or
// erase lines, or reorder text to hide what an extension asks for — which
// Gemini CLI guards against too.
func Printable(s string) string { return printable(s, false) }

// PrintableText is Printable for text of several lines: newlines and tabs
// are kept, everything else Printable escapes is escaped.
func PrintableText(s string) string { return printable(s, true) }

func printable(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r, keepLines) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, keepLines):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune, keepLines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !keepLines
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c: // bidi controls
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}
