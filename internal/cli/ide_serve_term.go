package cli

import (
	"log/slog"
	"os"

	"github.com/gemkit/gemkit/internal/term"
)

// newTerminalEditor builds the terminal front-end of `gemkit ide serve`
// without --editor stdio: diffs on s.Out (coloured on a terminal unless
// NO_COLOR is set), answers from s.In, edits in $VISUAL/$EDITOR. Given the
// companion's Server as its Events, its Run also prints the line to paste
// into another shell once the discovery file is written, unless envShown
// says --print-env printed the variables already.
func newTerminalEditor(s Streams, envShown bool) *term.Frontend {
	return term.New(term.Options{
		In:       s.In,
		Out:      s.Out,
		Color:    term.ColorEnabled(s.Out, os.Getenv),
		Editor:   term.EditorCommand(os.Getenv),
		Logger:   slog.Default(),
		EnvShown: envShown,
	})
}
