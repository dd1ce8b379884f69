package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/geminisettings"
)

// TestDoctorUnreadableSettings: with Gemini CLI's settings unreadable,
// doctor says so, with the file and line, and that the switches cannot
// be told until it is fixed; it draws nothing from the file (no name
// "lacking" from mcp.excluded, whose fix would fail on the same file, no
// gemkit mcp entry missing, no server unconfined). Readable again, the
// file is read as before. list and describe do the same.
func TestDoctorUnreadableSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	settings := geminisettings.Path(e.home)
	const cannot = "warning: Gemini CLI's settings cannot be read, so which extensions' servers and hooks are switched to gemkit (mcp.excluded, hooksConfig.disabled), and whether Gemini CLI reaches gemkit mcp, cannot be told until the file is fixed: "
	for _, c := range []struct{ name, body, why string }{
		{"a trailing comma", "{\n  \"mcp\": {\n    \"excluded\": [\"memory\", \"remote\",]\n  }\n}\n", settings + ", line 3: a trailing comma before ]"},
		{"mcp not an object", `{"mcp": ["memory", "remote"]}`, settings + ": mcp is not an object"},
	} {
		if err := os.WriteFile(settings, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, _ := e.run("doctor")
		if !strings.Contains(out, cannot+c.why) {
			t.Errorf("%s: doctor does not say %q:\n%s", c.name, cannot+c.why, out)
		}
		for _, amiss := range []string{"lacks", "no gemkit mcp entry", "unconfined", "adds them again"} {
			if strings.Contains(out, amiss) {
				t.Errorf("%s: doctor draws %q from a file it cannot read:\n%s", c.name, amiss, out)
			}
		}
		// list and describe say the same of where the servers run.
		for _, args := range [][]string{{"list"}, {"describe", "srv-ext"}} {
			out, _, _ := e.run(args...)
			if !strings.Contains(out, "switched to gemkit; whether Gemini CLI also starts them cannot be told until its settings file can be read ("+c.why) ||
				strings.Contains(out, "lacks") || strings.Contains(out, "unconfined") {
				t.Errorf("%s: %v:\n%s", c.name, args, out)
			}
		}
	}
	// Readable, without the extension's names: what it lacks is said.
	os.WriteFile(settings, []byte(`{"mcp": {"excluded": []}}`), 0o600)
	if out, _, _ := e.run("doctor"); strings.Contains(out, "cannot be read") || !strings.Contains(out, "lacks memory") {
		t.Errorf("doctor with the names gone:\n%s", out)
	}
}

// TestDoctorUnreadableHooks is the newcomer tour's hooks file with a
// comma missing: validate passes it (as Gemini CLI's does), Gemini CLI
// loads none of its hooks and says so only in its debug log, and the
// switch drops the hooks it had taken. doctor says the file cannot be
// read, with why, rather than "No problems found".
func TestDoctorUnreadableHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := hooksExtension(t, "hk")
	os.WriteFile(filepath.Join(src, "hooks", "hooks.json"), []byte(`{"hooks": {"BeforeTool": [{"hooks": [{"type": "command" "command": "true"}]}]}}`), 0o644)
	e.mustRun("link", src, "--consent")
	out, _, _ := e.run("doctor")
	if !strings.Contains(out, "warning: hk: hooks/hooks.json cannot be read") || strings.Contains(out, "No problems found") {
		t.Errorf("doctor on an unreadable hooks file:\n%s", out)
	}
}

// TestDoctorDiscardedHooks: a hooks file that reads, with an event's
// name misspelt and a hook's type too, whose hooks Gemini CLI skips
// (the type in its debug log only) and gemkit neither lists nor
// switches: doctor names each.
func TestDoctorDiscardedHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := hooksExtension(t, "hk")
	os.WriteFile(filepath.Join(src, "hooks", "hooks.json"), []byte(`{"hooks": {"BeforeTol": [{"hooks": [{"type": "command", "command": "true"}]}],
	  "BeforeTool": [{"hooks": [{"type": "comand", "command": "true"}]}]}}`), 0o644)
	e.mustRun("link", src, "--consent")
	out, _, _ := e.run("doctor")
	for _, want := range []string{
		`warning: hk: Gemini CLI skips this part of hooks/hooks.json, and gemkit does too: event "BeforeTol": not an event Gemini CLI knows`,
		`warning: hk: Gemini CLI skips this part of hooks/hooks.json, and gemkit does too: BeforeTool, hook 1: type "comand" is not command, plugin or runtime`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not say %q:\n%s", want, out)
		}
	}
}

// TestGrantSaysUnreadableHooks: consent granted to a switched extension
// whose hooks.json no longer reads takes the hooks the switch had taken
// out of Gemini CLI's settings, as Gemini CLI loads none of them: the
// grant says so rather than let them vanish.
func TestGrantSaysUnreadableHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := hooksExtension(t, "hk")
	hooks := filepath.Join(src, "hooks", "hooks.json")
	os.WriteFile(hooks, []byte(`{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "true"}]}]}}`), 0o644)
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "hk")
	os.WriteFile(hooks, []byte(`{"hooks": {"BeforeTool": [{"hooks": [{"type": "command" "command": "true"}]}]}}`), 0o644)
	out, errOut, code := e.run("consent", "hk", "--grant")
	if code != ExitOK || !strings.Contains(out, "Its hooks cannot be read (") || !strings.Contains(out, "none of them runs") {
		t.Errorf("consent --grant with hooks.json unreadable: exit %d\n%s\n%s", code, out, errOut)
	}
}

// hooksExtension is the folder of an extension named name with a hooks
// folder, for a test to write its hooks/hooks.json.
func hooksExtension(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	writeFiles(t, src, map[string]string{"gemini-extension.json": `{"name": "` + name + `", "version": "1.0.0"}`})
	if err := os.MkdirAll(filepath.Join(src, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}
