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
// NO_COLOR is set), answers from s.In, edits in $VISUAL/$EDITOR.
func newTerminalEditor(s Streams) (terminalEditor, error) {
	return term.New(term.Options{
		In:     s.In,
		Out:    s.Out,
		Color:  term.ColorEnabled(s.Out, os.Getenv),
		Editor: term.EditorCommand(os.Getenv),
		Logger: slog.Default(),
	}), nil
}

// announceServing tells the person at the terminal where the companion
// serves: call it once the discovery file is written, before or while Run
// runs. env holds the variables a shell needs to reach the companion.
func announceServing(ed terminalEditor, port int, discoveryFile string, env map[string]string) {
	if a, ok := ed.(interface{ Announce(string) }); ok {
		a.Announce(term.ServingText(port, discoveryFile, env))
	}
}
