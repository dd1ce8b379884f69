package client

import (
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// GeminiIDEEnabled reads ide.enabled from Gemini CLI's user settings
// ($GEMINI_CLI_HOME/.gemini/settings.json, else ~/.gemini/settings.json),
// where Gemini CLI 0.61.0 takes IDE mode from (packages/cli/src/config/config.ts);
// a file that is absent reads as off. known is false when the file cannot
// be read as Gemini CLI's settings.
func GeminiIDEEnabled(getenv func(string) string, home, cwd string) (enabled, known bool, path string) {
	dir := ide.AgentGemini.Folder(getenv, home, cwd)
	if dir == "" {
		return false, false, ""
	}
	path = filepath.Join(dir, "settings.json")
	s, err := geminisettings.Read(path)
	if err != nil {
		return false, false, path
	}
	return s.IDEEnabled, true, path
}

// doctorGeminiSettings warns when Gemini CLI's IDE mode is off: a companion
// that works is then never dialled, and the CLI asks first whether to
// connect, where its Yes runs /ide install, which has no installer for
// gemkit's editors and turns the question off for good
// (packages/cli/src/ui/AppContainer.tsx, shouldShowIdePrompt).
func doctorGeminiSettings(p *Plan, o Options, add addFinding) {
	home := o.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if on, known, path := GeminiIDEEnabled(o.Getenv, home, p.Cwd); known && !on {
		add(path, SeverityWarning, "IDE mode is off in Gemini CLI's settings, so gemini looks for no companion (at its start it may ask \"Do you want to connect … to Gemini CLI?\")",
			"type /ide enable in gemini (it writes ide.enabled: true there); if it asks that question first, answer No, not Yes, which looks for an installer the editor does not need")
	}
}
