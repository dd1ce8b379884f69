package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/extension"
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
		Title:    isTerminal(a.Out),
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

// firstRunHint is what a person whose Gemini CLI has IDE mode off must
// know before starting it, "" once it is on. Such a CLI asks "Do you want
// to connect gemkit to Gemini CLI?", and its Yes runs /ide install, which
// has no installer for gemkit and sets ide.hasSeenNudge so that it never
// asks again; /ide enable is the answer that works. Nothing a companion
// writes can skip that question: gemini-cli 0.61.0 shows it when it sees
// an editor (the discovery file's ideInfo) while the user's settings lack
// ide.enabled and ide.hasSeenNudge (packages/cli/src/ui/AppContainer.tsx,
// shouldShowIdePrompt and handleIdePromptComplete), and IDE mode comes
// from settings alone (packages/cli/src/config/config.ts:
// ideMode = settings.ide?.enabled).
func firstRunHint(a *app) string {
	home := a.getenv(extension.HomeEnv)
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return ""
		}
	}
	if geminiIDEEnabled(filepath.Join(home, ".gemini", "settings.json")) {
		return ""
	}
	return `First time? IDE mode is off in your Gemini CLI settings: in gemini, type /ide enable.
If gemini asks "Do you want to connect gemkit to Gemini CLI?", answer No (esc) and type /ide enable:
its Yes looks for an installer that gemkit does not need ("No installer is available for gemkit").
`
}

// geminiIDEEnabled reports whether Gemini CLI's user settings file turns
// IDE mode on ("ide": {"enabled": true}). A file that is missing or that
// encoding/json cannot read (Gemini CLI allows comments) counts as off, so
// the hint shows: it is harmless when IDE mode is on after all.
func geminiIDEEnabled(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var s struct {
		IDE struct {
			Enabled bool `json:"enabled"`
		} `json:"ide"`
	}
	return json.Unmarshal(b, &s) == nil && s.IDE.Enabled
}
