package cli

import (
	"encoding/json"
	"os"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/term"
)

// newTerminalEditor builds the terminal front-end of `gemkit ide serve`
// without --editor stdio: diffs on a.Out (coloured on a terminal unless
// NO_COLOR is set), answers from a.In, edits in $VISUAL/$EDITOR; once the
// companion serves, the files saved in the workspace as the open files
// (--watch), the export lines (--print-env) and the first-run hint.
func newTerminalEditor(a *app, o serveOptions) *term.Frontend {
	return term.New(term.Options{
		In:       a.In,
		Out:      a.Out,
		Color:    term.ColorEnabled(a.Out, a.getenv),
		Editor:   term.EditorCommand(a.getenv),
		Logger:   a.log,
		Title:    isTerminal(a.Out),
		Watch:    o.watch,
		PrintEnv: o.printEnv,
		Hint:     firstRunHint(a),
	})
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
	if geminiIDEEnabled(geminisettings.Path(home)) {
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
