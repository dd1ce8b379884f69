package cli

import (
	"context"
	"fmt"

	"github.com/gemkit/gemkit/internal/term"
	"github.com/gemkit/gemkit/internal/wswatch"
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

// startWorkspaceWatch watches the workspace folders for the terminal
// front-end, which has no editor to say which files are open: each file
// the person saves, in whatever editor, becomes the newest open file and
// the active one. With --editor stdio it is never started: the editor is
// the source of truth, and a plugin cannot attach to a terminal companion
// (it starts its own). The watch ends with ctx.
func startWorkspaceWatch(ctx context.Context, a *app, workspace []string, sink wswatch.Sink) error {
	w, err := wswatch.New(wswatch.Options{Roots: workspace, Logger: a.log})
	if err != nil {
		return err
	}
	folders := "folders"
	if w.Dirs() == 1 {
		folders = "folder"
	}
	fmt.Fprintf(a.Out, "  open files:     the files you save (watching %d %s; what git ignores is left out)\n", w.Dirs(), folders)
	go func() {
		if err := w.Run(ctx, sink); err != nil {
			a.log.Warn("workspace watcher stopped", "err", err)
		}
	}()
	return nil
}
