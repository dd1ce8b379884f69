package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// sandboxManifest has a stdio server gemkit sandboxes, a remote one and
// one that starts gemkit, which stay Gemini CLI's.
const sandboxManifest = `{"name": "srv-ext", "version": "1.0.0",
 "mcpServers": {
  "memory": {"command": "node", "args": ["${extensionPath}/server.js"]},
  "remote": {"httpUrl": "https://mcp.example.com/mcp"},
  "tools": {"command": "gemkit", "args": ["mcp", "--extension", "${extensionPath}"]}
 }}`

// srvExt is a new folder holding sandboxManifest, the extension's source.
func srvExt(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "srv-ext")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(sandboxManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

// userSettings is a Gemini CLI settings file with comments and keys of
// its own, which a switch and its undoing must leave as they are.
const userSettings = `{
  // Mine.
  "ui": {"theme": "GitHub"},
  "mcpServers": {
    "gemkit": {"command": "gemkit", "args": ["mcp"], "trust": true} /* added by gemini mcp add */
  }
}
`

// TestExtensionsSandbox: the switch adds the extension's stdio and
// remote servers to Gemini CLI's mcp.excluded (and nothing else of the
// file changes), saying which gemkit sandboxes and which it only
// connects to,
// records the switch and consent; a widening is recorded, changes the
// consent hash and is agreed to by the same command; --off gives back
// the settings file byte for byte.
func TestExtensionsSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte(miniServer), 0o644)
	e.mustRun("link", src, "--consent")
	// Consent given at link is withdrawn: the switch asks for it.
	e.mustRun("consent", "srv-ext", "--revoke")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	if err := os.WriteFile(settings, []byte(userSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	st := extension.OpenStore(e.home)
	m := readManifest(t, src)
	if st.ConsentGranted("srv-ext", extension.PermissionsHash(m)) {
		t.Fatal("consent still given after --revoke")
	}

	e.replacers = append(e.replacers, src, "$SRC")
	doctor := func() string { out, _, _ := e.run("doctor"); return out }
	if out := doctor(); !strings.Contains(out, "note: srv-ext: its MCP servers memory run unconfined in Gemini CLI, with your rights and your whole environment\n    fix: run them in gemkit's sandbox: `gemkit extensions sandbox srv-ext`") {
		t.Errorf("doctor before the switch:\n%s", out)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "servers of srv-ext: memory: unconfined in Gemini CLI (your rights, your whole environment); to run them in gemkit's sandbox: gemkit extensions sandbox srv-ext") {
		t.Errorf("list before the switch:\n%s", out)
	}

	out := e.mustRun("sandbox", "srv-ext")
	for _, w := range []string{
		"memory (local: node ", "switched to gemkit: Gemini CLI does not start it, gemkit mcp runs it in gemkit's sandbox, where it can " + extension.SandboxedServerWordsFor("srv-ext"),
		"remote (remote: https://mcp.example.com/mcp): a remote server, switched to gemkit: Gemini CLI does not connect to it; " + extension.RemoteServerWords,
		"Switched: Gemini CLI no longer starts memory nor connects to remote (mcp.excluded in " + settings + "); gemkit mcp serves memory (1 tool) in its sandbox, listed now, and connects to remote itself as Gemini CLI did (a remote server runs elsewhere: it is not sandboxed).",
		"\nWhat the sandbox refuses it: gemkit extensions doctor, with the command that allows each.\nUndo: gemkit extensions sandbox srv-ext --off\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("sandbox: output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "gemini mcp add") {
		t.Errorf("sandbox: asks to add gemkit, which the settings have:\n%s", out)
	}
	if strings.Contains(out, "default profile") {
		t.Errorf("sandbox: speaks of widening, which nobody asked for:\n%s", out)
	}
	gs, err := geminisettings.Read(settings)
	if err != nil || strings.Join(gs.Excluded, ",") != "memory,remote" {
		t.Fatalf("mcp.excluded = %v, %v", gs.Excluded, err)
	}
	mid, _ := os.ReadFile(settings)
	for _, c := range []string{"// Mine.", "/* added by gemini mcp add */"} {
		if !strings.Contains(string(mid), c) {
			t.Errorf("comment %s lost:\n%s", c, mid)
		}
	}
	c, err := st.ServerChoice("srv-ext")
	if err != nil || !c.Switched || strings.Join(c.Names, ",") != "memory,remote" {
		t.Errorf("choice %+v, %v", c, err)
	}
	if sw, _ := st.Switches(); fmt.Sprint(sw.Names) != "map[memory:{[srv-ext] false} remote:{[srv-ext] false}]" {
		t.Errorf("the records of mcp.excluded: %v", sw.Names)
	}
	perm := extension.PermissionsHash(m)
	if !st.ConsentGranted("srv-ext", perm) {
		t.Error("the switch recorded no consent")
	}
	if out := doctor(); strings.Contains(out, "srv-ext: its MCP servers") || strings.Contains(out, "srv-ext: switched") {
		t.Errorf("doctor after the switch:\n%s", out)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "servers of srv-ext: memory: in gemkit's sandbox (gemkit mcp), not started by Gemini CLI; remote: remote, connected to by gemkit mcp, not by Gemini CLI (not sandboxed: it runs elsewhere); back: gemkit extensions sandbox srv-ext --off") {
		t.Errorf("list after the switch:\n%s", out)
	}

	sandboxWidenings(t, e, st, settings, perm)
	sandboxOffAndUninstall(t, e, st, settings)
}

// sandboxWidenings: the switched srv-ext widened (hosts, write, Unix
// sockets) is recorded, shown and agreed to, its consent hash binding
// the widening; settings emptied by hand and consent withdrawn are what
// doctor tells.
func sandboxWidenings(t *testing.T, e *env, st *extension.Store, settings, perm string) {
	// A widening: recorded, shown, agreed to; the old consent no longer
	// matches the widened terms until the command records them.
	out := e.mustRun("sandbox", "srv-ext", "--allow-host", "api.example.com", "--allow-write", "workspace")
	if !strings.Contains(out, "and, as you allowed, create, change and delete files in your workspace (its protected paths excepted); connect to api.example.com (and no other host)") ||
		!strings.Contains(out, "\nAllowed beyond the default profile: create, change and delete files in your workspace (its protected paths excepted); connect to api.example.com (and no other host). Back to it: gemkit extensions sandbox srv-ext --default-profile\n") {
		t.Errorf("widening: output:\n%s", out)
	}
	if c, _ := st.ServerChoice("srv-ext"); strings.Join(c.Hosts, ",") != "api.example.com" || c.Write != extension.AccessWorkspace {
		t.Errorf("widening recorded as %+v", c)
	}
	if !st.ConsentGranted("srv-ext", perm) {
		t.Error("the widened terms were not agreed to")
	}
	checkGolden(t, "describe-sandboxed.txt", e.describe("srv-ext"))
	// Unix sockets: a widening of their own, added to the others, shown
	// by describe and agreed to.
	unixWords := "create Unix sockets, which reach only those inside its sandbox"
	if out := e.mustRun("sandbox", "srv-ext", "--allow-unix-sockets"); !strings.Contains(out, "connect to api.example.com (and no other host); "+unixWords) {
		t.Errorf("--allow-unix-sockets: output:\n%s", out)
	}
	if c, _ := st.ServerChoice("srv-ext"); !c.UnixSockets || c.Write != extension.AccessWorkspace || !st.ConsentGranted("srv-ext", perm) {
		t.Errorf("--allow-unix-sockets recorded as %+v", c)
	}
	if out := e.describe("srv-ext"); !strings.Contains(out, unixWords) {
		t.Errorf("describe does not show Unix sockets:\n%s", out)
	}
	// consent shows the servers' profile, which it covers.
	if out, _, _ := e.run("consent", "srv-ext"); !strings.Contains(e.scrub(out), "Its MCP servers:\n  - memory (local: node $SRC/server.js): switched to gemkit") ||
		!strings.Contains(out, "; and, as you allowed, create, change and delete files in your workspace") {
		t.Errorf("consent does not show the servers' profile:\n%s", out)
	}
	// The person empties mcp.excluded by hand, and withdraws consent:
	// doctor says Gemini CLI starts the server too, and gemkit serves it
	// no longer.
	os.WriteFile(settings, []byte(userSettings), 0o600)
	e.mustRun("consent", "srv-ext", "--revoke")
	out, _, _ = e.run("doctor")
	for _, w := range []string{"warning: srv-ext: switched to gemkit, but Gemini CLI's mcp.excluded (" + settings + ") lacks memory, which Gemini CLI starts unconfined beside gemkit's sandboxed copy, and remote, which Gemini CLI connects to itself beside gemkit mcp",
		"warning: srv-ext: switched to gemkit, but without your consent", "fix: agree with `gemkit extensions consent srv-ext --grant`"} {
		if !strings.Contains(out, w) {
			t.Errorf("doctor lacks %q:\n%s", w, out)
		}
	}
	e.mustRun("sandbox", "srv-ext")
	recs, _ := os.ReadFile(filepath.Join(e.home, ".gemini", "gemkit", "consent.json"))
	var cr struct {
		Extensions map[string]struct{ PermissionsHash string }
	}
	json.Unmarshal(recs, &cr)
	if h := cr.Extensions["srv-ext"].PermissionsHash; h == perm || h == "" {
		t.Errorf("the consent hash %q does not bind the widening", h)
	}
	if _, errOut, code := e.run("sandbox", "srv-ext", "--allow-write", "home"); code == ExitOK || !strings.Contains(errOut, `write scope "home"`) {
		t.Errorf("--allow-write home: exit %d\n%s", code, errOut)
	}
}

// sandboxOffAndUninstall: --off gives srv-ext's servers back to Gemini
// CLI, the settings as they were and the widening kept for the next
// switch; uninstalled while switched, its names and choice go with it.
func sandboxOffAndUninstall(t *testing.T, e *env, st *extension.Store, settings string) {
	out := e.mustRun("sandbox", "srv-ext", "--off")
	if !strings.Contains(out, "Removed memory, remote from mcp.excluded") || !strings.Contains(out, "Switch again: gemkit extensions sandbox srv-ext") {
		t.Errorf("--off: output:\n%s", out)
	}
	if after, _ := os.ReadFile(settings); string(after) != userSettings {
		t.Errorf("after --off the settings are:\n%s\nwant:\n%s", after, userSettings)
	}
	if c, _ := st.ServerChoice("srv-ext"); c.Switched || len(c.Names) != 0 || len(c.Hosts) != 1 {
		t.Errorf("after --off the choice is %+v (the widening stays for the next switch)", c)
	}

	// Uninstalled while switched: its servers' names go from the
	// settings with it, and so does the choice.
	// It says what it changed in the settings, and neither that Gemini
	// CLI starts the servers again nor how to switch back: the extension
	// is gone.
	e.mustRun("sandbox", "srv-ext")
	if out := e.mustRun("sandbox", "srv-ext", "--default-profile"); !strings.Contains(out, "\nBack to the default profile: nothing allowed beyond it.\n") {
		t.Errorf("--default-profile: output:\n%s", out)
	}
	out = e.mustRun("uninstall", "srv-ext")
	if !strings.Contains(out, "Removed memory, remote from mcp.excluded in "+settings) || !strings.Contains(out, "Uninstalled srv-ext") ||
		strings.Contains(out, "Gemini CLI's again") || strings.Contains(out, "Switch again") {
		t.Errorf("uninstall of a switched extension says:\n%s", out)
	}
	if after, _ := os.ReadFile(settings); string(after) != userSettings {
		t.Errorf("after uninstall the settings are:\n%s", after)
	}
	if all, _ := st.ServerChoices(); len(all) != 0 {
		t.Errorf("after uninstall the choices are %+v", all)
	}
}

// TestExtensionsSandboxRefusals: an extension without a stdio server, a
// server name the person's own mcpServers uses and a settings file
// Gemini CLI cannot read are refused in words, and the file is left as
// it was.
func TestExtensionsSandboxRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("link", srvExt(t), "--consent")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	for _, tc := range []struct{ name, body, want string }{
		{"clash", `{"mcpServers": {"memory": {"command": "x"}}}`, "your own mcpServers in " + settings + " has memory"},
		{"trailing comma", "{\n \"a\": 1,\n}", settings + ", line 3: a key was expected (a trailing comma?); Gemini CLI cannot read it either"},
	} {
		os.WriteFile(settings, []byte(tc.body), 0o600)
		_, errOut, code := e.run("sandbox", "srv-ext")
		if code == ExitOK || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr:\n%s", tc.name, code, errOut)
		}
		if b, _ := os.ReadFile(settings); string(b) != tc.body {
			t.Errorf("%s: the settings changed: %s", tc.name, b)
		}
	}
	none := filepath.Join(t.TempDir(), "none")
	os.MkdirAll(none, 0o755)
	os.WriteFile(filepath.Join(none, "gemini-extension.json"), []byte(`{"name": "none", "version": "1", "mcpServers": {"r": {"url": "https://x.example.com/sse"}}}`), 0o644)
	e.mustRun("link", none, "--consent")
	if _, errOut, code := e.run("sandbox", "none"); code != ExitNo || !strings.Contains(errOut, "none has no MCP server gemkit can run in its sandbox") {
		t.Errorf("no stdio server: exit %d\n%s", code, errOut)
	}
}

func readManifest(t *testing.T, dir string) *extension.Manifest {
	t.Helper()
	ext, err := extension.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ext.Manifest
}

// TestSandboxKeptOnUpdate: an update of a switched extension that adds a
// server adds its name to Gemini CLI's mcp.excluded too, so that Gemini
// CLI does not start it beside gemkit's copy; --off removes it with the
// others.
func TestSandboxKeptOnUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	e.mustRun("install", src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	two := strings.Replace(strings.Replace(sandboxManifest, `"1.0.0"`, `"1.1.0"`, 1),
		`"remote":`, `"fs": {"command": "node", "args": ["fs.js"]}, "remote":`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(two), 0o644)
	_, errOut, code := e.run("update", "srv-ext", "--consent")
	if code != ExitOK || !strings.Contains(errOut, "srv-ext stays switched to gemkit: Gemini CLI does not start or connect to its new server(s) fs either") {
		t.Fatalf("update: exit %d\n%s", code, errOut)
	}
	settings := geminisettings.Path(e.home)
	if gs, err := geminisettings.Read(settings); err != nil || strings.Join(gs.Excluded, ",") != "memory,remote,fs" {
		t.Errorf("mcp.excluded after the update: %v, %v", gs.Excluded, err)
	}
	e.mustRun("sandbox", "srv-ext", "--off")
	if b, err := os.ReadFile(settings); !os.IsNotExist(err) {
		t.Errorf("after --off the settings file gemkit made is still there (%v):\n%s", err, b)
	}
}

// TestSandboxNamesExcludedBefore: a server name the person had already
// excluded is not added by the switch, nor removed by --off, which says
// Gemini CLI still does not start it; the names the switch added go.
func TestSandboxNamesExcludedBefore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("link", srvExt(t), "--consent")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	const mine = `{"mcp": {"excluded": ["memory"]}}`
	os.WriteFile(settings, []byte(mine), 0o600)
	e.mustRun("sandbox", "srv-ext")
	if sw, _ := extension.OpenStore(e.home).Switches(); !sw.Names["memory"].Yours || sw.Names["remote"].Yours {
		t.Errorf("records %+v: memory was there before, remote was not", sw.Names)
	}
	out := e.mustRun("sandbox", "srv-ext", "--off")
	if !strings.Contains(out, "Removed remote from mcp.excluded") || !strings.Contains(out, "still names memory (it did before the switch), so Gemini CLI does not start them either") {
		t.Errorf("--off:\n%s", out)
	}
	if b, _ := os.ReadFile(settings); string(b) != mine {
		t.Errorf("the settings after --off:\n%s", b)
	}
}

// TestUninstallKeptData: uninstalling keeps the data folder of the
// extension's MCP servers and says where it is and how to delete it,
// when they wrote something there; an empty one is not mentioned.
// (Not parallel: the data folder follows HOME, as gemkit mcp's does.)
func TestUninstallKeptData(t *testing.T) {
	e := newEnv(t)
	t.Setenv("HOME", e.home)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	data := filepath.Join(e.home, ".local", "share", "gemkit", "extension-data", "srv-ext")
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "empty"},
		{name: "written", files: map[string]string{"memory.jsonl": "{}\n"},
			want: "Uninstalled srv-ext\nKept what its MCP servers wrote, in " + data + ": gemkit mcp gives it back to them if you install srv-ext again; to delete it: rm -r " + data + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.mustRun("link", src, "--consent")
			os.MkdirAll(data, 0o700)
			for n, body := range c.files {
				os.WriteFile(filepath.Join(data, n), []byte(body), 0o600)
			}
			out := e.mustRun("uninstall", "srv-ext")
			if c.want == "" && strings.Contains(out, "Kept") || c.want != "" && !strings.Contains(out, c.want) {
				t.Errorf("uninstall says:\n%s\nwant %q", out, c.want)
			}
			if _, err := os.Stat(data); err != nil {
				t.Errorf("the data folder is gone: %v", err)
			}
		})
	}
}

// TestSwitchWordsEscaped: the names a manifest chose (its servers', its
// remote servers') reach the person's terminal escaped in what the
// switch says it did, as in its consent text: tried in the tour, a
// server named "a\x1b[2J\x1b]0;pwned\x07b" cleared the screen and set the
// terminal's title when `gemkit extensions sandbox` said "Switched:
// Gemini CLI no longer starts ...", and OSC 52 would have set the
// clipboard. A name's line break is escaped too, so it fakes no line.
func TestSwitchWordsEscaped(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a\x1b[2J\x1b]0;pwned\x07b", "c\x1b]52;c;cm0gLXJmIH4K\x07d", "e\nSwitched: nothing\rf"} {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			e := newEnv(t)
			src := filepath.Join(t.TempDir(), "odd-names")
			local, _ := json.Marshal(name)
			remote, _ := json.Marshal(name + "-remote")
			writeFiles(t, src, map[string]string{
				"gemini-extension.json": `{"name": "odd-names", "version": "1.0.0", "mcpServers": {` + string(local) + `: {"command": "node", "args": ["${extensionPath}/server.js"]}, ` +
					string(remote) + `: {"httpUrl": "https://mcp.example.com/mcp"}}}`,
				"server.js": "// a server\n",
			})
			e.mustRun("link", src, "--consent")
			for _, args := range [][]string{{"sandbox", "odd-names"}, {"list"}, {"sandbox", "odd-names", "--off"}} {
				out := e.mustRun(args...)
				if strings.ContainsAny(out, "\x1b\x07\r") || strings.Contains(out, "\nSwitched: nothing") {
					t.Errorf("%s printed a name as it is:\n%q", strings.Join(args, " "), out)
				}
			}
		})
	}
}
