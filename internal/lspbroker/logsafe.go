package lspbroker

import (
	"fmt"
	"log/slog"
	"strings"
	"unicode"
)

// EscapeAttr is a slog.HandlerOptions.ReplaceAttr for the broker's log:
// every string (and error, or any other value written as text) is
// escaped so that what a tool chose (a folder's name in a workspace path,
// a file a server names) can neither start a new line nor run anything
// when the log is read by a shell: a newline, any other control
// character, and the characters a shell acts on inside or outside double
// quotes ($ ` \ " ' ; & | < > !) are written as \xHH. A tool that made
// the log another file (through a link the broker no longer follows)
// gained nothing to run from it this way either.
func EscapeAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); needsEscape(s) {
			a.Value = slog.StringValue(escapeLog(s))
		}
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		a.Value = slog.StringValue(escapeLog(s))
	}
	return a
}

// shellChars are the characters a shell acts on that escapeLog writes
// as \xHH.
const shellChars = "$`\\\"';&|<>!"

func needsEscape(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(shellChars, r) || !unicode.IsPrint(r) && r != ' ' {
			return true
		}
	}
	return false
}

// escapeLog writes s with control characters, characters that are not
// printable and shellChars escaped (\xHH, or \uHHHH above ASCII).
func escapeLog(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80 && (r < 0x20 || r == 0x7f || strings.ContainsRune(shellChars, r)):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
