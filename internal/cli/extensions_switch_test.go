package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// memExt writes an extension named name into a new folder: with a
// stdio server "memory" in its manifest, or, with agent set, in the
// front matter of its agent "keeper" (agents/keeper.md), and the files
// of more.
func memExt(t testing.TB, name string, agent bool, more map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	files := map[string]string{
		"gemini-extension.json": `{"name": "` + name + `", "version": "1.0.0", "mcpServers": {"memory": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`,
		"server.js":             "// a server\n",
	}
	if agent {
		files["gemini-extension.json"] = `{"name": "` + name + `", "version": "1.0.0"}`
		files["agents/keeper.md"] = "---\nname: keeper\ndescription: Keeps notes\nmcp_servers:\n  memory:\n    command: node\n    args:\n      - ${extensionPath}/server.js\n---\nYou keep the notes.\n"
	}
	for k, v := range more {
		files[k] = v
	}
	writeFiles(t, dir, files)
	return dir
}

// manifestExt is a folder named name holding manifest as its
// gemini-extension.json.
func manifestExt(t *testing.T, name, manifest string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFiles(t, dir, map[string]string{"gemini-extension.json": manifest})
	return dir
}

// linkSwitched links memExt(name) with consent and switches it to
// gemkit; it returns the extension's folder.
func (e *env) linkSwitched(name string) string {
	e.t.Helper()
	src := memExt(e.t, name, false, nil)
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", name)
	return src
}

// excluded is Gemini CLI's mcp.excluded in the env's settings.
func (e *env) excluded() []string {
	e.t.Helper()
	gs, err := geminisettings.Read(geminisettings.Path(e.home))
	if err != nil {
		e.t.Fatal(err)
	}
	return gs.Excluded
}

// TestSwitchSharedServerName is the sixth round's finding and its
// class: two switched extensions each have a server named memory
// (Gemini CLI keys servers by name); taking one away, whichever way
// (uninstall, by its name in any letters, --off, an update that drops
// the server), keeps the name
// in mcp.excluded while the other needs it, and says so, so Gemini CLI
// never starts the other's server unconfined. A name of an agent's
// server counts as one of the manifest's, and a name the person had
// written stays when no extension needs it.
func TestSwitchSharedServerName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		agent   bool // the second has memory in an agent's front matter
		mine    bool // the person had excluded memory before
		takeOff func(e *env, first, src string) string
	}{
		{name: "uninstall", takeOff: func(e *env, first, _ string) string { return e.mustRun("uninstall", first) }},
		// The name in other letters is the same extension (a tour's
		// finding: the switch's records stayed behind).
		{name: "uninstall in other letters", takeOff: func(e *env, first, _ string) string { return e.mustRun("uninstall", strings.ToUpper(first)) }},
		{name: "off", takeOff: func(e *env, first, _ string) string { return e.mustRun("sandbox", first, "--off") }},
		{name: "agent's server, uninstall", agent: true, takeOff: func(e *env, first, _ string) string { return e.mustRun("uninstall", first) }},
		{name: "update drops the server", takeOff: func(e *env, first, src string) string {
			os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "`+first+`", "version": "1.1.0"}`), 0o644)
			out, errOut, code := e.run("update", first, "--consent")
			if code != ExitOK {
				e.t.Fatalf("update: %d\n%s", code, errOut)
			}
			return out + errOut
		}},
		{name: "the person's name", mine: true, takeOff: func(e *env, first, _ string) string { return e.mustRun("uninstall", first) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			settings := geminisettings.Path(e.home)
			before := "{\n  \"ui\": {\"theme\": \"GitHub\"} // mine\n}\n"
			if tc.mine {
				before = "{\"mcp\": {\"excluded\": [\"memory\"]}}\n"
			}
			os.MkdirAll(filepath.Dir(settings), 0o700)
			os.WriteFile(settings, []byte(before), 0o600)
			srcA := memExt(t, "mem-a", false, nil)
			e.mustRun("install", srcA, "--consent")
			e.mustRun("link", memExt(t, "mem-b", tc.agent, nil), "--consent")
			e.mustRun("sandbox", "mem-a")
			out := e.mustRun("sandbox", "mem-b")
			if !strings.Contains(out, "The server name memory is also the extensions' mem-a") {
				t.Errorf("the second switch does not tell the two apart:\n%s", out)
			}
			if out, _, _ := e.run("doctor"); !tc.agent && !strings.Contains(out, `each define an MCP server called "memory"; Gemini CLI runs only one of them: of those enabled, the first in its extensions folder's order (mem-a, then mem-b)`) {
				t.Errorf("doctor does not say which one Gemini CLI runs:\n%s", out)
			}
			sw, _ := extension.OpenStore(e.home).Switches()
			if o := sw.Names["memory"]; strings.Join(o.Needs, ",") != "mem-a,mem-b" || o.Yours != tc.mine {
				t.Errorf("the records of memory: %+v", o)
			}
			out = tc.takeOff(e, "mem-a", srcA)
			if !slices.Contains(e.excluded(), "memory") {
				t.Fatalf("mcp.excluded lost memory, which mem-b needs: %v\n%s", e.excluded(), out)
			}
			if !strings.Contains(out, "Kept memory in mcp.excluded: the switched extension mem-b needs it too") && tc.name != "update drops the server" {
				t.Errorf("the taking off does not say the name stays:\n%s", out)
			}
			e.mustRun("sandbox", "mem-b", "--off")
			if got, _ := os.ReadFile(settings); string(got) != before {
				t.Errorf("once neither is switched the settings are:\n%s\nwant:\n%s", got, before)
			}
		})
	}
}

// TestSwitchOldRecords: records written before gemkit kept who needs
// each name (version 1: each extension's added names) are read so that
// a name the second switch found there already is not lost with the
// first extension: the old records' shape of the finding.
func TestSwitchOldRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("install", memExt(t, "mem-a", false, nil), "--consent")
	e.mustRun("install", memExt(t, "mem-b", false, nil), "--consent")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte(`{"mcp": {"excluded": ["memory"]}}`), 0o600)
	old := `{"version": 1, "extensions": {"mem-a": {"switched": true, "excluded": ["memory"]}, "mem-b": {"switched": true}}, "created": ["mcp", "mcp.excluded"]}`
	os.WriteFile(filepath.Join(e.home, ".gemini", "gemkit", "extension-servers.json"), []byte(old), 0o600)
	out := e.mustRun("uninstall", "mem-a")
	if !slices.Contains(e.excluded(), "memory") || !strings.Contains(out, "mem-b needs it too") {
		t.Fatalf("mcp.excluded %v after uninstalling mem-a:\n%s", e.excluded(), out)
	}
	e.mustRun("sandbox", "mem-b", "--off")
	if b, _ := os.ReadFile(settings); string(b) != "{}\n" {
		t.Errorf("the settings gemkit made:\n%s", b)
	}
}

// hookFiles is an extension's hook: a BeforeTool hook of write_file.
var hookFiles = map[string]string{
	"hooks/hooks.json": `{"hooks": {"BeforeTool": [{"matcher": "write_file", "sequential": true, "hooks": [{"type": "command", "command": "node ${extensionPath}/hooks/check.js", "timeout": 4000}]}],
	  "SessionStart": [{"hooks": [{"type": "command", "name": "greet", "command": "echo hi"}]}]}}`,
	"hooks/check.js": "process.stdin.resume();\n",
}

// TestSwitchHooks: the switch turns each command hook off in Gemini CLI
// (hooksConfig.disabled, by its name or its command as Gemini CLI
// reads it) and adds gemkit's hook on the same event, matcher,
// sequential flag and timeout; --off gives back the settings file byte
// for byte, comments and all. A name another hook also uses (the
// person's, or an extension's not switched) is refused, naming both; a
// hook the person had turned off stays off and gemkit runs it neither.
func TestSwitchHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte(userSettings), 0o600)
	src := memExt(t, "hooked", false, hookFiles)
	e.mustRun("link", src, "--consent")
	out := e.mustRun("sandbox", "hooked")
	if !strings.Contains(out, "Its hooks BeforeTool-1, greet run in gemkit's sandbox") {
		t.Errorf("the switch says:\n%s", out)
	}
	gs, err := geminisettings.Read(settings)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node " + src + "/hooks/check.js", "greet"}
	if !slices.Equal(gs.Disabled, want) {
		t.Errorf("hooksConfig.disabled = %q, want %q", gs.Disabled, want)
	}
	checkGemkitHooks(t, settings, e.home)
	// Switching again changes nothing; a hook whose matcher changed gets
	// gemkit's definition written again.
	mid0, _ := os.ReadFile(settings)
	e.mustRun("sandbox", "hooked")
	if again, _ := os.ReadFile(settings); string(again) != string(mid0) {
		t.Errorf("switching again changed the settings:\n%s", again)
	}
	hooksJSON := filepath.Join(src, "hooks", "hooks.json")
	orig, _ := os.ReadFile(hooksJSON)
	os.WriteFile(hooksJSON, []byte(strings.Replace(string(orig), `"matcher": "write_file"`, `"matcher": "replace"`, 1)), 0o644)
	e.mustRun("consent", "hooked", "--grant")
	e.mustRun("sandbox", "hooked")
	if gs, _ := geminisettings.Read(settings); !slices.ContainsFunc(gs.Hooks, func(h geminisettings.Hook) bool {
		return h.Matcher == "replace" && strings.HasSuffix(h.Command, "BeforeTool-1")
	}) ||
		slices.ContainsFunc(gs.Hooks, func(h geminisettings.Hook) bool { return h.Matcher == "write_file" }) {
		t.Errorf("after the matcher changed: %+v", gs.Hooks)
	}
	os.WriteFile(hooksJSON, orig, 0o644)
	e.mustRun("consent", "hooked", "--grant")
	e.mustRun("sandbox", "hooked")
	// describe, list and doctor say where each part runs; doctor sees
	// a string gemkit needs taken out of hooksConfig.disabled by hand.
	if out := e.describe("hooked"); !strings.Contains(out, "  hook BeforeTool-1: gemkit's sandbox (run by gemkit's hook, in folders Gemini CLI trusts") ||
		!strings.Contains(out, "  server memory: gemkit's sandbox (switched to gemkit mcp") {
		t.Errorf("describe:\n%s", out)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "code of hooked: hook BeforeTool-1: gemkit's sandbox; hook greet: gemkit's sandbox") {
		t.Errorf("list:\n%s", out)
	}
	mid, _ := os.ReadFile(settings)
	os.WriteFile(settings, []byte(strings.Replace(string(mid), `"greet"]`, `"other"]`, 1)), 0o600)
	if out, _, _ := e.run("doctor"); !strings.Contains(out, `hooksConfig.disabled lacks "greet", which the switched hooked need`) ||
		!strings.Contains(out, "warning: hooked: switched to gemkit, but its hook greet: unconfined (switched, but hooksConfig.disabled lacks it") {
		t.Errorf("doctor with greet taken out by hand:\n%s", out)
	}
	os.WriteFile(settings, mid, 0o600)
	// Widening one hook by name: recorded for it alone, agreed to.
	e.mustRun("sandbox", "hooked", "--hook", "greet", "--allow-host", "api.example.com")
	c, _ := extension.OpenStore(e.home).ServerChoice("hooked")
	if strings.Join(c.HookWidening["greet"].Hosts, ",") != "api.example.com" || len(c.Hosts) != 0 {
		t.Errorf("the hook's widening: %+v", c)
	}
	if _, errOut, code := e.run("sandbox", "hooked", "--hook", "nope", "--allow-host", "x.example.com"); code == ExitOK || !strings.Contains(errOut, "its hooks are BeforeTool-1, greet") {
		t.Errorf("--hook nope: %d\n%s", code, errOut)
	}
	e.mustRun("sandbox", "hooked", "--off")
	if b, _ := os.ReadFile(settings); string(b) != userSettings {
		t.Errorf("after --off:\n%s\nwant:\n%s", b, userSettings)
	}

	switchHookNamesRefused(t, e, settings)
}

// checkGemkitHooks: the settings hold gemkit's hooks in place of the
// switched extension hooked's, on the same event and matcher, each
// running gemkit extensions hook with home.
func checkGemkitHooks(t *testing.T, settings, home string) {
	t.Helper()
	var doc struct {
		Hooks map[string][]struct {
			Matcher    string `json:"matcher"`
			Sequential bool   `json:"sequential"`
			Hooks      []struct {
				Type, Command, Name string
				Timeout             int
			} `json:"hooks"`
		} `json:"hooks"`
	}
	raw, _ := os.ReadFile(settings)
	if err := json.Unmarshal(stripLineComments(raw), &doc); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	bt := doc.Hooks["BeforeTool"]
	if len(bt) != 1 || bt[0].Matcher != "write_file" || !bt[0].Sequential || len(bt[0].Hooks) != 1 ||
		bt[0].Hooks[0].Command != "gemkit extensions hook --home "+home+" hooked BeforeTool-1" || bt[0].Hooks[0].Timeout != 4000 {
		t.Errorf("gemkit's BeforeTool hook: %+v\n%s", bt, raw)
	}
	if ss := doc.Hooks["SessionStart"]; len(ss) != 1 || ss[0].Hooks[0].Command != "gemkit extensions hook --home "+home+" hooked greet" {
		t.Errorf("gemkit's SessionStart hook: %+v", ss)
	}
}

// switchHookNamesRefused: a switch that would turn off a hook of the
// person's, or of an extension not switched, by the same name is refused
// with the settings unchanged; a hook the person turned off stays off.
func switchHookNamesRefused(t *testing.T, e *env, settings string) {
	t.Helper()
	// The person's own hook named greet: refused, nothing changed.
	mine := strings.Replace(userSettings, `"ui": {"theme": "GitHub"},`, `"ui": {"theme": "GitHub"},
  "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "name": "greet", "command": "echo bye"}]}]},`, 1)
	os.WriteFile(settings, []byte(mine), 0o600)
	_, errOut, code := e.run("sandbox", "hooked")
	if code == ExitOK || !strings.Contains(errOut, `would turn off your own SessionEnd hook "greet" in `+settings) {
		t.Errorf("a name the person's hook uses: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(settings); string(b) != mine {
		t.Errorf("the refused switch changed the settings:\n%s", b)
	}
	// Another extension's hook of that name, not switched: refused.
	os.WriteFile(settings, []byte(userSettings), 0o600)
	e.mustRun("link", memExt(t, "other", false, map[string]string{"hooks/hooks.json": `{"hooks": {"AfterAgent": [{"hooks": [{"type": "command", "name": "greet", "command": "true"}]}]}}`}), "--consent")
	if _, errOut, code := e.run("sandbox", "hooked"); code == ExitOK || !strings.Contains(errOut, "would turn off the extension other's hook greet too, which is not switched to gemkit") {
		t.Errorf("a name another extension's hook uses: exit %d\n%s", code, errOut)
	}
	e.mustRun("uninstall", "other")
	// A hook the person turned off stays off.
	off := `{"hooksConfig": {"disabled": ["greet"]}}`
	os.WriteFile(settings, []byte(off), 0o600)
	if out := e.mustRun("sandbox", "hooked"); !strings.Contains(out, "Its hook greet stays off, as your hooksConfig.disabled had it") {
		t.Errorf("a hook turned off before:\n%s", out)
	}
	if gs, _ := geminisettings.Read(settings); slices.ContainsFunc(gs.Hooks, func(h geminisettings.Hook) bool { return strings.HasSuffix(h.Command, " greet") }) {
		t.Errorf("gemkit runs a hook the person turned off: %+v", gs.Hooks)
	}
	e.mustRun("sandbox", "hooked", "--off")
	if b, _ := os.ReadFile(settings); string(b) != off {
		t.Errorf("after --off:\n%s", b)
	}
}

// stripLineComments blanks // comments outside strings, enough for the
// settings these tests write.
func stripLineComments(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, " //"); i >= 0 && !strings.Contains(l[i:], `"`) {
			l = l[:i]
		}
		if i := strings.Index(l, "/*"); i >= 0 {
			if j := strings.Index(l, "*/"); j > i {
				l = l[:i] + l[j+2:]
			}
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

// TestDoctorOwnServerName: a switched extension whose server name left
// mcp.excluded while the person's own mcpServers has that name: doctor's
// fix says to rename theirs first, since the switch it used to offer
// refuses that name (a tour's finding: a fix sure to fail).
func TestDoctorOwnServerName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.linkSwitched("mem-a")
	settings := geminisettings.Path(e.home)
	os.WriteFile(settings, []byte(`{"mcpServers": {"memory": {"command": "mine"}}}`), 0o600)
	out, _, _ := e.run("doctor")
	if !strings.Contains(out, "your own mcpServers in "+settings+" have memory too") || !strings.Contains(out, "rename yours, then run `gemkit extensions sandbox mem-a`") {
		t.Errorf("doctor's fix:\n%s", out)
	}
	if _, errOut, code := e.run("sandbox", "mem-a"); code == ExitOK || !strings.Contains(errOut+out, "rename yours") {
		t.Errorf("the switch took the person's name (exit %d):\n%s", code, errOut)
	}
}

// TestUnpinnableNotOffered: an extension whose server's package-runner
// line gemkit cannot pin (npx with several packages) is refused by the
// switch; list, describe and doctor say why instead of offering that
// switch (a tour's finding: a fix sure to fail), and list --json names
// the server unpinnable.
func TestUnpinnableNotOffered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("link", manifestExt(t, "multi", `{"name": "multi", "version": "1.0.0",
 "mcpServers": {"s": {"command": "npx", "args": ["-y", "-p", "a", "-p", "b", "foo"]}}}`), "--consent")
	if _, _, code := e.run("sandbox", "multi"); code == ExitOK {
		t.Fatal("the switch took a line it cannot pin")
	}
	for _, args := range [][]string{{"list"}, {"describe", "multi"}, {"doctor"}} {
		out, _, _ := e.run(args...)
		if !strings.Contains(out, "gemkit's sandbox cannot run them: its MCP server s (npx -y -p a -p b foo): its npx command line cannot be pinned") {
			t.Errorf("%v does not say why:\n%s", args, out)
		}
		if strings.Contains(out, "gemkit's sandbox: `gemkit extensions sandbox multi`") || strings.Contains(out, "to run them in gemkit's sandbox: gemkit extensions sandbox multi") {
			t.Errorf("%v offers the switch that refuses:\n%s", args, out)
		}
	}
	if out := e.mustRun("list", "--json"); !strings.Contains(out, `"unpinnable": [`) {
		t.Errorf("list --json:\n%s", out)
	}
}

// TestReleaseKeepsDisabled: a held extension that the person had also
// disabled in Gemini CLI stays disabled when consent releases the hold,
// and the words say so, with the command that enables it (a tour's
// finding: "Gemini CLI runs it again" of a disabled extension).
func TestReleaseKeepsDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := e.linkSwitched("mem-a")
	e.mustRun("disable", "mem-a")
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// changed\n"), 0o644)
	if out, _, _ := e.run("doctor"); !strings.Contains(out, "held in Gemini CLI since") {
		t.Fatalf("doctor did not hold the changed extension:\n%s", out)
	}
	out := e.mustRun("consent", "mem-a", "--grant")
	if strings.Contains(out, "Gemini CLI runs mem-a again") || !strings.Contains(out, "it stays disabled there as you set it: gemkit extensions enable mem-a") {
		t.Errorf("consent --grant of a disabled held extension says:\n%s", out)
	}
	if en, err := extension.OpenStore(e.home).Enablement("mem-a"); err != nil || en.User {
		t.Errorf("the release enabled the extension the person had disabled: %+v %v", en, err)
	}
}

// TestOffSaysHoldsNames: --off of a held extension whose change added a
// server says that the hold's name leaves mcp.excluded too, not only
// the switch's (a tour's finding: it went unsaid).
func TestOffSaysHoldsNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := e.linkSwitched("mem-a")
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "mem-a", "version": "1.0.0", "mcpServers": {"memory": {"command": "node", "args": ["${extensionPath}/server.js"]}, "extra": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`), 0o644)
	if out, _, _ := e.run("doctor"); !strings.Contains(out, "held in Gemini CLI since") || !slices.Contains(e.excluded(), "extra") {
		t.Fatalf("doctor did not hold the changed extension (excluded %v):\n%s", e.excluded(), out)
	}
	out := e.mustRun("sandbox", "mem-a", "--off")
	if !strings.Contains(out, "Removed extra from mcp.excluded in "+geminisettings.Path(e.home)+": gemkit's hold had put it there.") {
		t.Errorf("--off does not say the hold's name goes:\n%s", out)
	}
	if ex := e.excluded(); len(ex) != 0 {
		t.Errorf("mcp.excluded after --off: %v", ex)
	}
}
