package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtensionsConsent: consent is shown, given and withdrawn without
// running a tool; a linked extension whose files change needs it again,
// and the command says so.
func TestExtensionsConsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "my-ext")
	e.mustRun("new", src)
	if out, errOut, code := e.run("link", src, "--consent"); code != ExitOK {
		t.Fatalf("link: exit %d\n%s%s", code, out, errOut)
	}

	steps := []struct {
		name     string
		args     []string
		change   bool // append a line to a file of the extension first
		wantCode int
		want     []string
	}{
		{"given at link", []string{"consent", "my-ext"}, false, ExitOK, []string{"Extension my-ext (", "may:", "Consent: given "}},
		{"revoke", []string{"consent", "my-ext", "--revoke"}, false, ExitOK, []string{"Consent to my-ext withdrawn"}},
		{"not given", []string{"consent", "my-ext"}, false, ExitNo, []string{"Consent: not given", "To agree: `gemkit extensions consent my-ext --grant`"}},
		{"grant", []string{"consent", "my-ext", "--grant"}, false, ExitOK, []string{"Consent given to my-ext as it is now"}},
		{"files changed", []string{"consent", "my-ext"}, true, ExitNo, []string{"its files changed since", "To agree: "}},
		{"grant again", []string{"consent", "my-ext", "--grant"}, false, ExitOK, []string{"Consent given to my-ext"}},
		{"given again", []string{"consent", "my-ext"}, false, ExitOK, []string{"Consent: given "}},
		{"both flags", []string{"consent", "my-ext", "--grant", "--revoke"}, false, ExitError, nil},
		{"unknown", []string{"consent", "nope"}, false, ExitError, nil},
	}
	for _, s := range steps {
		if s.change {
			f, err := os.OpenFile(filepath.Join(src, "gemini-extension.json"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("\n")
			f.Close()
		}
		out, errOut, code := e.run(s.args...)
		if code != s.wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s%s", s.name, code, s.wantCode, out, errOut)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", s.name, w, out)
			}
		}
	}
}

// TestToolHelpAndNames: `run EXT` lists the tools, `run EXT TOOL --help`
// shows the tool's arguments, and a folder given for a name is answered
// with the extension's name.
func TestToolHelpAndNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "my-ext")
	e.mustRun("new", src)
	steps := []struct {
		args     []string
		wantCode int
		want     string
		stderr   bool
	}{
		{[]string{"describe", src}, ExitError, `is a folder holding extension my-ext, which is not installed: ` + "`gemkit extensions link " + src + "`", true},
		{[]string{"link", src, "--consent"}, ExitOK, "", false},
		{[]string{"describe", src}, ExitError, "is a folder; name the extension instead: my-ext", true},
		{[]string{"run", "my-ext"}, ExitError, "name the tool to run: its tools are countWords(file: string), slugify(text: string, maxLength?: integer = 60)", true},
		{[]string{"run", "my-ext", "slugify", "--help"}, ExitOK, "Usage: gemkit extensions run my-ext slugify --text STRING [--maxLength INTEGER]", false},
	}
	for _, s := range steps {
		out, errOut, code := e.run(s.args...)
		got := out
		if s.stderr {
			got = errOut
		}
		if code != s.wantCode || !strings.Contains(got, s.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s%s", strings.Join(s.args, " "), code, s.wantCode, s.want, out, errOut)
		}
	}
}

// TestGeminiCLINames: Gemini CLI's template names and install flags mean
// the same here, or say why not.
func TestGeminiCLINames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	if out := e.mustRun("new", filepath.Join(dir, "srv"), "mcp-server"); !strings.Contains(out, "server.js") {
		t.Errorf("new ... mcp-server did not make the mcp template:\n%s", out)
	}
	if _, errOut, code := e.run("new", filepath.Join(dir, "sk"), "skills"); code != ExitError || !strings.Contains(errOut, "`gemini extensions new") {
		t.Errorf("new ... skills: exit %d, %s", code, errOut)
	}
	src := filepath.Join(dir, "tools-ext")
	e.mustRun("new", src)
	e.mustRun("install", src, "--consent", "--auto-update", "--pre-release", "--skip-settings")
	b, err := os.ReadFile(filepath.Join(e.home, ".gemini", "extensions", "tools-ext", ".gemini-extension-install.json"))
	if err != nil || !strings.Contains(string(b), `"autoUpdate": true`) || !strings.Contains(string(b), `"allowPreRelease": true`) {
		t.Errorf("install metadata %s (%v) lacks autoUpdate and allowPreRelease", b, err)
	}
}
