package extension

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"red \x1b[31mX\x1b[0m", `red \x1b[31mX\x1b[0m`, `red \x1b[31mX\x1b[0m`},
		{"erase\x1b[2K\x1b[1Aup", `erase\x1b[2K\x1b[1Aup`, `erase\x1b[2K\x1b[1Aup`},
		{"over\rwrite", `over\x0dwrite`, `over\x0dwrite`},
		{"two\nlines\tand tab", `two\x0alines\x09and tab`, "two\nlines\tand tab"},
		{"bidi \u202eevil\u202c", `bidi \u202eevil\u202c`, `bidi \u202eevil\u202c`},
		{"c1 \u009b31m", `c1 \u009b31m`, `c1 \u009b31m`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"del\x7f", `del\x7f`, `del\x7f`},
	} {
		if got := Printable(tc.in); got != tc.line {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := PrintableText(tc.in); got != tc.text {
			t.Errorf("PrintableText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}
