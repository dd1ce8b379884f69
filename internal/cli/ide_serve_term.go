package cli

import (
	"context"
	"log/slog"
	"os"

	"github.com/gemkit/gemkit/ide/companion"
	"github.com/gemkit/gemkit/internal/term"
)

// terminalEditor is an editor front-end that runs in gemkit's own terminal:
// the companion calls it as its Editor, and Run feeds it the person's
// answers until ctx ends.
type terminalEditor interface {
	companion.Editor
	Run(ctx context.Context, ev companion.Events) error
}

// newTerminalEditor builds the terminal front-end of `gemkit ide serve`
// without --editor stdio: diffs on s.Out (coloured on a terminal unless
// NO_COLOR is set), answers from s.In, edits in $VISUAL/$EDITOR. When the
// Events given to Run are the companion's Server, Run also prints the env
// line to paste into another shell once the discovery file is written.
func newTerminalEditor(s Streams) (terminalEditor, error) {
	return term.New(term.Options{
		In:     s.In,
		Out:    s.Out,
		Color:  term.ColorEnabled(s.Out, os.Getenv),
		Editor: term.EditorCommand(os.Getenv),
		Logger: slog.Default(),
	}), nil
}
