package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstRunHint: until the user's Gemini CLI settings turn IDE mode on,
// the terminal front-end tells the person to answer its first-run question
// with /ide enable (its Yes finds no installer for gemkit).
func TestFirstRunHint(t *testing.T) {
	tests := []struct {
		name     string
		settings string // "" for no file
		wantHint bool
	}{
		{"no settings file", "", true},
		{"ide not mentioned", `{"security":{}}`, true},
		{"only the nudge seen", `{"ide":{"hasSeenNudge":true}}`, true},
		{"ide enabled", `{"ide":{"enabled":true}}`, false},
		{"comments (unreadable here)", "// mine\n{\"ide\":{\"enabled\":true}}", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.settings != "" {
				if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(tc.settings), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a := newApp(Streams{Out: io.Discard, Err: io.Discard})
			a.lookupEnv = func(k string) (string, bool) {
				if k == "GEMINI_CLI_HOME" {
					return home, true
				}
				return "", false
			}
			hint := firstRunHint(a)
			if got := hint != ""; got != tc.wantHint {
				t.Fatalf("hint = %q, want a hint: %v", hint, tc.wantHint)
			}
			if tc.wantHint && (!strings.Contains(hint, "/ide enable") || !strings.Contains(hint, "No (esc)")) {
				t.Errorf("the hint does not say to answer No and run /ide enable:\n%s", hint)
			}
		})
	}
}
