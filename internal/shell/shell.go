// Package shell writes words for a POSIX shell, for the command lines
// gemkit prints for a person to paste: a doctor's `rm FILE`, a server's
// `export NAME=VALUE`.
package shell

import "strings"

// Quote returns s as one shell word: as it is when it holds only
// characters no shell treats specially (letters, digits and -_./:@%+,=),
// else between single quotes, where each single quote of s ends the
// quoted part, stands escaped by a backslash and starts the next. The
// empty string is a pair of single quotes.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, special) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func special(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+,=", r))
}
