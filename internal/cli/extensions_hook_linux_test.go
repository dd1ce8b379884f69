package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestHookConsent: a switched hook runs only as the person agreed to
// it. Once a file of its extension changes (here the one the hook's
// command reads), gemkit extensions hook refuses in words (exit 1,
// Gemini CLI's warning) and the command does not run; consent to the
// extension as it is now lets it run again. The check runs while the
// sandbox is set up (sandbox.Command.Gate): the command's start waits
// for it.
func TestHookConsent(t *testing.T) {
	e := newEnv(t)
	// The hook's workspace is the folder Gemini CLI starts it in.
	t.Chdir(e.ws)
	src := filepath.Join(t.TempDir(), "noted")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "noted", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat >/dev/null; cat ${extensionPath}/hooks/verdict.json"}]}]}}`,
		"hooks/verdict.json":    `{"decision":"allow"}` + "\n",
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "noted")
	if out, errOut, code := e.run("hook", "noted", "BeforeTool-1"); code != ExitOK || out != `{"decision":"allow"}`+"\n" {
		t.Fatalf("the agreed hook: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(src, "hooks", "verdict.json"), []byte(`{"decision":"deny","reason":"changed"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.run("hook", "noted", "BeforeTool-1")
	if code != ExitNo || strings.Contains(out, "changed") || !strings.Contains(errOut, "gemkit did not run the hook: you have not agreed to the extension noted as it is now") {
		t.Errorf("the changed extension's hook: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	e.mustRun("consent", "noted", "--grant")
	if out, errOut, code := e.run("hook", "noted", "BeforeTool-1"); code != ExitOK || !strings.Contains(out, "changed") {
		t.Errorf("agreed again: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
}

// TestHookConsentUnprivileged runs TestHookConsent as uid 65534.
func TestHookConsentUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestHookConsent$")
}
