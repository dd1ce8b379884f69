package term

import (
	"io"
	"os"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"golang.org/x/term"
)

// ANSI styles of a coloured diff. They are applied per line so that a
// terminal never keeps a colour past the end of a line.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiCyan   = "\x1b[36m"
	ansiYellow = "\x1b[33m"
)

// ColorEnabled reports whether output to w should be coloured: only when w
// is a terminal and NO_COLOR is not set to a non-empty value
// ([NO_COLOR]).
//
// [NO_COLOR]: https://no-color.org
func ColorEnabled(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// UnifiedDiff returns the unified diff of old and new with the given labels,
// or "" when the two are equal. It keeps the diff library behind this
// package so that callers depend on our output format only.
func UnifiedDiff(oldLabel, newLabel, old, new string) string {
	return udiff.Unified(oldLabel, newLabel, old, new)
}

// Colorize paints a unified diff for a terminal: headers bold, hunk
// markers cyan, removed lines red and added lines green.
func Colorize(diff string) string {
	if diff == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(diff) + len(diff)/4)
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		body, nl := strings.CutSuffix(line, "\n")
		style := ""
		switch {
		case strings.HasPrefix(body, "--- "), strings.HasPrefix(body, "+++ "):
			style = ansiBold
		case strings.HasPrefix(body, "@@"):
			style = ansiCyan
		case strings.HasPrefix(body, "-"):
			style = ansiRed
		case strings.HasPrefix(body, "+"):
			style = ansiGreen
		case strings.HasPrefix(body, `\`):
			style = ansiYellow
		}
		if style == "" {
			b.WriteString(body)
		} else {
			b.WriteString(style)
			b.WriteString(body)
			b.WriteString(ansiReset)
		}
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
