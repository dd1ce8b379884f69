package cli

import (
	"context"
	"errors"

	"github.com/gemkit/gemkit/ide/companion"
)

// terminalEditor is an editor front-end that runs in gemkit's own terminal:
// the companion calls it as its Editor, and Run feeds it the person's
// answers until ctx ends.
type terminalEditor interface {
	companion.Editor
	Run(ctx context.Context, ev companion.Events) error
}

// newTerminalEditor builds the terminal front-end of `gemkit ide serve`
// without --editor stdio.
func newTerminalEditor(s Streams) (terminalEditor, error) {
	return nil, errors.New("the terminal front-end is not built yet")
}
