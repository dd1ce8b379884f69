package cli

import (
	"fmt"
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
		// Each route is named truly: gemkit acp asks through the editor,
		// gemkit mcp through a client that can ask, and only where no one
		// can are the tools refused.
		{"revoke", []string{"consent", "my-ext", "--revoke"}, false, ExitOK, []string{"Consent to my-ext withdrawn: its tools ask before they run where someone can answer", "an editor through gemkit acp", "an MCP client that can ask such as Claude Code", "refused where no one can (gemkit run, Gemini CLI through gemkit mcp)"}},
		{"not given", []string{"consent", "my-ext"}, false, ExitNo, []string{"Consent: not given", "To agree: `gemkit extensions consent my-ext --grant`"}},
		{"grant", []string{"consent", "my-ext", "--grant"}, false, ExitOK, []string{"Consent given to my-ext as it is now"}},
		{"files changed", []string{"consent", "my-ext"}, true, ExitNo, []string{"this file of the extension changed: gemini-extension.json (changed)", "not to its files as they are now", "To agree: "}},
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

// TestExtensionsConsentNamesChangedFiles: `consent EXT` and `describe
// EXT` name the files that changed since consent was given, and how, in a
// statement of their own before the permissions (`consent`) or under the
// consent line (`describe`); a record from before the per-file list says
// it cannot name them.
func TestExtensionsConsentNamesChangedFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(t *testing.T, src string)
		oldRec bool // the record predates the per-file list
		want   string
	}{
		{"edited", func(t *testing.T, src string) { appendTo(t, filepath.Join(src, "tools/count_words.py"), "import os\n") }, false,
			"Since you agreed, this file of the extension changed: tools/count_words.py (changed). Look at it in $SRC before agreeing again."},
		{"added", func(t *testing.T, src string) { appendTo(t, filepath.Join(src, "tools/new.sh"), "curl x | sh\n") }, false,
			"this file of the extension changed: tools/new.sh (added)."},
		{"removed", func(t *testing.T, src string) { os.Remove(filepath.Join(src, "docs/usage.md")) }, false,
			"this file of the extension changed: docs/usage.md (removed)."},
		{"mode", func(t *testing.T, src string) { os.Chmod(filepath.Join(src, "tools/find_todos.sh"), 0o700) }, false,
			"tools/find_todos.sh (mode changed)."},
		{"symlink retargeted", func(t *testing.T, src string) {
			os.Remove(filepath.Join(src, "current"))
			if err := os.Symlink("tools/find_todos.sh", filepath.Join(src, "current")); err != nil {
				t.Fatal(err)
			}
		}, false, "this file of the extension changed: current (changed)."},
		{"more than the cap", func(t *testing.T, src string) {
			for i := range 11 {
				appendTo(t, filepath.Join(src, fmt.Sprintf("gen/%02d.js", i)), "x\n")
			}
			os.Remove(filepath.Join(src, "GEMINI.md"))
		}, false, "these files of the extension changed: GEMINI.md (removed), gen/00.js (added), gen/01.js (added), gen/02.js (added), gen/03.js (added), gen/04.js (added), gen/05.js (added), gen/06.js (added), gen/07.js (added), gen/08.js (added) and 2 more. Look at them in $SRC before agreeing again."},
		// What an npm install changes in the dependencies the extension
		// ships does not hide its own changed file: that comes first.
		{"own before dependencies", func(t *testing.T, src string) {
			for i := range 12 {
				appendTo(t, filepath.Join(src, fmt.Sprintf("node_modules/dep/%02d.js", i)), "x\n")
			}
			appendTo(t, filepath.Join(src, "tools/count_words.py"), "import os\n")
		}, false, "these files of the extension changed: tools/count_words.py (changed), node_modules/dep/00.js (added), node_modules/dep/01.js (added), node_modules/dep/02.js (added), node_modules/dep/03.js (added), node_modules/dep/04.js (added), node_modules/dep/05.js (added), node_modules/dep/06.js (added), node_modules/dep/07.js (added), node_modules/dep/08.js (added) and 3 in its dependencies (node_modules). Look at them in $SRC before agreeing again."},
		{"record without the list", func(t *testing.T, src string) { appendTo(t, filepath.Join(src, "tools/count_words.py"), "import os\n") }, true,
			"Since you agreed, the extension's files changed; gemkit cannot name them, as your consent was recorded before it kept a list of files. Look at $SRC before agreeing again."},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			src := filepath.Join(t.TempDir(), "my-ext")
			e.mustRun("new", src)
			if err := os.Symlink("tools/count_words.py", filepath.Join(src, "current")); err != nil {
				t.Fatal(err)
			}
			e.mustRun("link", src, "--consent")
			if c.oldRec {
				dropFileLists(t, filepath.Join(e.home, ".gemini", "gemkit"))
			}
			c.change(t, src)
			want := strings.ReplaceAll(c.want, "$SRC", src)

			out, errOut, code := e.run("consent", "my-ext")
			first, rest, _ := strings.Cut(out, "\n")
			if code != ExitNo || !strings.HasPrefix(first, "Since you agreed, ") || !strings.Contains(first, want) || !strings.HasPrefix(rest, "Extension my-ext (") {
				t.Fatalf("consent: exit %d; want %q on a line of its own before the permissions:\n%s%s", code, want, out, errOut)
			}
			out, _, _ = e.run("describe", "my-ext")
			_, after, _ := strings.Cut(out, "  consent: granted for these permissions, not for the extension's files as they are now; asked again before a tool runs\n")
			if next, _, _ := strings.Cut(after, "\n"); !strings.HasPrefix(next, "  Since you agreed, ") || !strings.Contains(next, want) {
				t.Errorf("describe lacks %q under its consent line:\n%s", want, out)
			}

			// Agreeing again records the list: the next change is named.
			e.mustRun("consent", "my-ext", "--grant")
			appendTo(t, filepath.Join(src, "after.txt"), "more\n")
			if out, _, _ := e.run("consent", "my-ext"); !strings.HasPrefix(out, "Since you agreed, this file of the extension changed: after.txt (added).") {
				t.Errorf("after --grant:\n%s", out)
			}
		})
	}
}

// appendTo appends s to the file at path, creating it (and its folder)
// when it does not exist.
func appendTo(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// dropFileLists removes the per-file lists of the consent records in the
// state folder, leaving the records as gemkit wrote them
// before they kept a per-file list.
func dropFileLists(t *testing.T, state string) {
	t.Helper()
	lists := filepath.Join(state, "consent-files")
	if ents, err := os.ReadDir(lists); err != nil || len(ents) == 0 {
		t.Fatalf("no file list to drop in %s: %v", lists, err)
	}
	if err := os.RemoveAll(lists); err != nil {
		t.Fatal(err)
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

// TestRevokedWords: withdrawing consent says what it does to the
// extension's tools and to the MCP servers gemkit mcp runs in its
// sandbox, which it no longer starts; of an extension that only ships
// servers, only the servers are spoken of, by consent and consent
// --grant too.
func TestRevokedWords(t *testing.T) {
	t.Parallel()
	servers := " (memory) until you agree again with `gemkit extensions consent srv-ext --grant`"
	for _, c := range []struct {
		name      string
		manifest  string
		want, not []string
	}{
		{"tools only", `{"name": "my-ext", "version": "1.0.0"}`, []string{"its tools ask before they run"}, []string{"MCP servers"}},
		{"servers only", sandboxManifest, []string{"Consent to srv-ext withdrawn: gemkit mcp does not start its MCP servers" + servers + ".\n"}, []string{"its tools"}},
		{"tools and servers", strings.Replace(sandboxManifest, `"version": "1.0.0",`, `"version": "1.0.0", "tools": [{"name": "t", "description": "Does t.", "executable": "t.sh", "runtime": "shell"}],`, 1),
			[]string{"its tools ask before they run", "; gemkit mcp does not start its MCP servers" + servers}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			src := filepath.Join(t.TempDir(), "ext")
			os.MkdirAll(src, 0o755)
			os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(c.manifest), 0o644)
			os.WriteFile(filepath.Join(src, "t.sh"), []byte("echo\n"), 0o755)
			os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
			if out, errOut, code := e.run("link", src, "--consent"); code != ExitOK {
				t.Fatalf("link: exit %d\n%s%s", code, out, errOut)
			}
			name := "srv-ext"
			if c.name == "tools only" {
				name = "my-ext"
			}
			out := e.mustRun("consent", name, "--revoke")
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.not {
				if strings.Contains(out, w) {
					t.Errorf("speaks of %q:\n%s", w, out)
				}
			}
			if c.name != "servers only" {
				return
			}
			// Shown and given again: what it says is of its servers.
			out, _, _ = e.run("consent", name)
			for _, w := range []string{"Extension srv-ext (", ") has no tools of its own.\nIts MCP servers:\n", "Consent: not given; gemkit mcp does not start its MCP servers" + servers} {
				if !strings.Contains(out, w) {
					t.Errorf("consent lacks %q:\n%s", w, out)
				}
			}
			if out := e.mustRun("consent", name, "--grant"); !strings.Contains(out, "Consent given to srv-ext as it is now: gemkit mcp runs its MCP servers as above (") || strings.Contains(out, "may:") {
				t.Errorf("consent --grant says:\n%s", out)
			}
		})
	}
}
