package term

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ServingText is what the terminal says once the companion listens, after
// the serve command's own lines (address, workspace, discovery file): the
// line to paste into another shell so that a Gemini CLI started there
// finds this companion (left out when env is empty), and how to answer
// diffs.
func ServingText(env map[string]string) string {
	var b strings.Builder
	if len(env) > 0 {
		b.WriteString("To connect a Gemini CLI from another shell, run there:\n  export")
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, " %s=%s", k, shellQuote(env[k]))
		}
		b.WriteString("\n")
	}
	b.WriteString("Proposed changes will show here. Press Ctrl-D to reject what waits and stop, Ctrl-C to stop.\n")
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
