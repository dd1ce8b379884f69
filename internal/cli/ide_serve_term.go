package cli

import (
	"github.com/gemkit/gemkit/internal/term"
)

// newTerminalEditor builds the terminal front-end of `gemkit ide serve`
// without --editor stdio: diffs on a.Out (coloured on a terminal unless
// NO_COLOR is set), answers from a.In, edits in $VISUAL/$EDITOR. Given the
// companion's Server as its Events, its Run also prints the line to paste
// into another shell once the discovery file is written, unless envShown
// says --print-env printed the variables already.
func newTerminalEditor(a *app, envShown bool) *term.Frontend {
	return term.New(term.Options{
		In:       a.In,
		Out:      a.Out,
		Color:    term.ColorEnabled(a.Out, a.getenv),
		Editor:   term.EditorCommand(a.getenv),
		Logger:   a.log,
		EnvShown: envShown,
	})
}
