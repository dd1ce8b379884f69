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
// diffs. In a container (env sets REMOTE_CONTAINERS) the line is
// required, not optional: without it the real CLI dials
// host.docker.internal (gemini-cli 0.61.0 getIdeServerHost,
// packages/core/src/ide/ide-connection-utils.ts), so the text says so.
func ServingText(env map[string]string) string {
	var b strings.Builder
	if len(env) > 0 {
		if env["REMOTE_CONTAINERS"] != "" {
			b.WriteString("Required in this container: a Gemini CLI connects only from a shell that ran this line first\n" +
				"(without REMOTE_CONTAINERS it dials host.docker.internal, not 127.0.0.1):\n  export")
		} else {
			b.WriteString("To connect a Gemini CLI from another shell, run there (optional: a gemini started in the workspace finds\n" +
				"this companion by itself; the line pins it to this one when several run):\n  export")
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, " %s=%s", k, shellQuote(env[k]))
		}
		b.WriteString("\n")
	}
	b.WriteString("Proposed changes will show here. Ctrl-D or Ctrl-C rejects what waits (so that no CLI is left waiting) and stops.\n")
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
