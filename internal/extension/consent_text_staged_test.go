package extension

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsentTextReadsTheStagedFiles: the question before an install and
// before an update names what the files being installed hold (their
// hooks, their policies), read from the staging copy the person is asked
// about, though it names the paths they will have: read at those paths,
// an install found no folder there and said neither, and an update
// described the version already installed.
func TestConsentTextReadsTheStagedFiles(t *testing.T) {
	hooks := func(cmd string) string {
		return `{"hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "` + cmd + `"}]}]}}`
	}
	const policy = "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"deny\"\npriority = 10\n"
	src := filepath.Join(t.TempDir(), "staged")
	writeTree(t, src, map[string]string{
		ManifestFile:         manifestJSON("staged", "1.0.0", ""),
		"hooks/hooks.json":   hooks("echo first-hook"),
		"policies/deny.toml": policy,
	})
	s := newStore(t)
	var asked ConsentPrompt
	record := func(_ context.Context, p ConsentPrompt) (bool, error) { asked = p; return true, nil }
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: record}); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(asked.Lines, "\n")
	for _, want := range []string{"Hooks it runs (hooks/hooks.json)", "echo first-hook", "Rules it adds to Gemini CLI's policy", "run_shell_command"} {
		if !strings.Contains(text, want) {
			t.Errorf("the install's question does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "no such file or directory") {
		t.Errorf("the install's question read a folder that is not there yet:\n%s", text)
	}
	if want := filepath.Join(s.finalDir(s.Dir(), "staged")); asked.Extension.Dir != want {
		t.Errorf("the question's extension is at %s, want its final folder %s", asked.Extension.Dir, want)
	}

	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("staged", "1.1.0", ""), "hooks/hooks.json": hooks("echo second-hook")})
	asked = ConsentPrompt{}
	refuse := func(_ context.Context, p ConsentPrompt) (bool, error) { asked = p; return false, nil }
	if _, err := s.Update(context.Background(), "staged", UpdateRequest{Consent: refuse}); !errors.Is(err, ErrConsentRefused) {
		t.Fatalf("update: %v", err)
	}
	if text := strings.Join(asked.Lines, "\n"); !strings.Contains(text, "echo second-hook") || strings.Contains(text, "echo first-hook") {
		t.Errorf("the update's question does not name the new version's hook:\n%s", text)
	}
}
