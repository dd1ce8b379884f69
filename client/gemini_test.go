package client

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorGeminiIDEModeOff: a companion that works is never dialled by
// a gemini whose settings leave IDE mode off, so doctor warns of it (as
// `:checkhealth gemkit` and `gemkit ide serve` do) instead of only saying
// that the CLI would connect. Gemini CLI's settings allow comments.
func TestDoctorGeminiIDEModeOff(t *testing.T) {
	for _, tc := range []struct {
		name, settings string // "" for no file
		warn           bool
	}{
		{"no settings file", "", true},
		{"nudge seen only", `{"ide": {"hasSeenNudge": true}}`, true},
		{"off", `{"ide": {"enabled": false}}`, true},
		{"on", `{"ide": {"enabled": true}}`, false},
		{"on, with a comment", "{\n  // IDE mode\n  \"ide\": {\"enabled\": true}\n}", false},
		{"unreadable", `{"ide": `, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, settings := doctorWithSettings(t, "", tc.settings)
			warned := false
			for _, f := range d.Findings {
				warned = warned || (f.Subject == settings && f.Severity == SeverityWarning && strings.Contains(f.Fix, "/ide enable"))
			}
			if warned != tc.warn {
				t.Errorf("warned %v, want %v: %+v", warned, tc.warn, d.Findings)
			}
		})
	}
}

// TestDoctorQwenIDEModeOff: Qwen Code takes IDE mode as off when its
// settings do not turn it on (settings.ide?.enabled ?? false), so with no
// settings file at all it looks for no companion either, and
// `doctor --as qwen` must say so as `doctor` does for Gemini CLI.
func TestDoctorQwenIDEModeOff(t *testing.T) {
	for _, tc := range []struct {
		name, settings string // "" for no file
		warn           bool
	}{
		{"no settings file", "", true},
		{"off", `{"ide": {"enabled": false}}`, true},
		{"on", `{"ide": {"enabled": true}}`, false},
		{"unreadable", `{"ide": `, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, settings := doctorWithSettings(t, AgentQwen, tc.settings)
			warned := false
			for _, f := range d.Findings {
				warned = warned || (f.Subject == settings && strings.Contains(f.Message, "IDE mode is off"))
			}
			if warned != tc.warn {
				t.Errorf("warned %v, want %v: %+v", warned, tc.warn, d.Findings)
			}
		})
	}
}

// doctorWithSettings is doctor's report, as agent's rules have it, from
// a workspace with no companion, for a HOME whose agent settings file
// (~/.gemini or ~/.qwen) holds text, or is absent when text is "";
// settings is that file's path.
func doctorWithSettings(t *testing.T, agent, text string) (d *DoctorReport, settings string) {
	t.Helper()
	root := t.TempDir()
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws")
	dot := ".gemini"
	if agent == AgentQwen {
		dot = ".qwen"
	}
	settings = filepath.Join(home, dot, "settings.json")
	for _, dir := range []string{filepath.Dir(settings), ws} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if text != "" {
		if err := os.WriteFile(settings, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home}
	d, err := Doctor(context.Background(), Options{Agent: agent, Dir: filepath.Join(root, "none"), Cwd: ws, IDEPID: os.Getpid(),
		Host: "127.0.0.1", Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return d, settings
}
