package term

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/shell"
)

// ServingText is what the terminal says once the companion listens, after
// the serve command's own lines (address, workspace, discovery file): the
// line to paste into another shell so that a Gemini CLI or Qwen Code
// started there finds this companion (left out when env is empty), and
// how to answer diffs. The line is optional everywhere: a CLI started in
// the workspace finds the companion through its discovery file (or lock
// file), and in a container, where Gemini CLI dials host.docker.internal
// without REMOTE_CONTAINERS (gemini-cli 0.61.0 getIdeServerHost,
// packages/core/src/ide/ide-connection-utils.ts), through the file's
// stdio bridge; the line spares it that detour.
func ServingText(env map[string]string) string {
	var b strings.Builder
	if len(env) > 0 {
		b.WriteString("To connect Gemini CLI or Qwen Code from another shell, run there (optional: gemini and qwen started in the\n" +
			"workspace find this companion by themselves; the line pins them to this one when several run):\n  export")
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, " %s=%s", k, shell.Quote(env[k]))
		}
		b.WriteString("\n")
	}
	b.WriteString("Proposed changes will show here. Ctrl-D or Ctrl-C rejects what waits (so that no CLI is left waiting) and stops.\n")
	return b.String()
}
