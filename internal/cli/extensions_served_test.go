package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/geminisettings"
)

// TestConsentNeverGivenToUnbindable: link and consent --grant of a
// folder whose files consent cannot bind (a file with another name on
// disk, as pnpm's store makes) are refused in words that name the file
// and the fix, before anything is said to be agreed to: the tour's
// `link --consent` said "Consent given" to a tree the switch then
// refused. An install copies the files, whose copies have one name.
func TestConsentNeverGivenToUnbindable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	if err := os.Link(filepath.Join(src, "server.js"), filepath.Join(t.TempDir(), "store-server.js")); err != nil {
		t.Fatal(err)
	}
	const why = "this file has another name on disk (a hard link, such as a build step's ln or pnpm's store makes): server.js"
	out, errOut, code := e.run("link", src, "--consent")
	if all := out + errOut; code == ExitOK || !strings.Contains(all, "srv-ext is not linked: gemkit does not run the tools or the MCP servers of the extension in "+src) ||
		!strings.Contains(all, why) || !strings.Contains(all, "cp --remove-destination") || strings.Contains(all, "Consent given") {
		t.Errorf("link --consent: exit %d\n%s", code, all)
	}
	if out := e.mustRun("list", "--json"); strings.Contains(out, "srv-ext") {
		t.Errorf("the extension was linked all the same:\n%s", out)
	}
	e.mustRun("install", src, "--consent")
	e.mustRun("consent", "srv-ext")
	e.mustRun("uninstall", "srv-ext")
	// Linked once the link is gone, and then made one again: consent
	// --grant refuses it as the start would.
	os.Remove(filepath.Join(src, "server.js"))
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	e.mustRun("link", src, "--consent")
	e.mustRun("consent", "srv-ext", "--revoke")
	if err := os.Link(filepath.Join(src, "server.js"), filepath.Join(t.TempDir(), "store-server.js")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = e.run("consent", "srv-ext", "--grant")
	if code != ExitNo || !strings.Contains(out+errOut, why) || strings.Contains(out+errOut, "Consent given") {
		t.Errorf("consent --grant: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSwitchRefusesWhatCannotBeServed: a switch that gemkit mcp could not
// serve says so, with the fix, switches nothing and never says "Switched"
// or "served": a link into a folder other programs write (not one a copy
// made), and a server whose command cannot be found. list, describe and
// doctor of a switched server that cannot be served since say it too.
func TestSwitchRefusesWhatCannotBeServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	e.mustRun("link", src, "--consent")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte(userSettings), 0o600)
	shared := filepath.Join(t.TempDir(), "lib.js")
	os.WriteFile(shared, []byte("// shared\n"), 0o644)
	os.Symlink(shared, filepath.Join(src, "lib.js"))
	out, errOut, code := e.run("sandbox", "srv-ext")
	all := out + errOut
	if code != ExitNo || !strings.Contains(all, "not switched: gemkit mcp could not serve srv-ext's MCP servers, so Gemini CLI goes on starting them itself") ||
		!strings.Contains(all, "lib.js is a symbolic link to "+shared) || !strings.Contains(all, "replace the link with the file itself") ||
		strings.Contains(all, "Switched") || strings.Contains(all, "serves") {
		t.Errorf("switch with a link into a shared folder: exit %d\n%s", code, all)
	}
	if b, _ := os.ReadFile(settings); string(b) != userSettings {
		t.Errorf("the settings changed:\n%s", b)
	}
	os.Remove(filepath.Join(src, "lib.js"))

	// A server whose program is nowhere.
	m := strings.Replace(sandboxManifest, `"command": "node"`, `"command": "no-such-runtime-4417"`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(m), 0o644)
	out, errOut, code = e.run("sandbox", "srv-ext")
	all = out + errOut
	if code != ExitNo || !strings.Contains(all, "as before. Its MCP server memory would not start: its command: no-such-runtime-4417: not found on PATH") ||
		!strings.Contains(all, ". Install no-such-runtime-4417, or put it on PATH, then run `gemkit extensions sandbox srv-ext` again.") || strings.Contains(all, "Switched") {
		t.Errorf("switch with a server whose command is nowhere: exit %d\n%s", code, all)
	}
	// Two programs missing, each named; a PyPI runner's, which gemkit
	// would not start anyway, not asked for.
	m = strings.Replace(m, `"remote": {"httpUrl": "https://mcp.example.com/mcp"}`, `"other": {"command": "no-such-tool-5"}, "py": {"command": "uvx", "args": ["mcp-server-fetch"]}`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(m), 0o644)
	out, errOut, code = e.run("sandbox", "srv-ext")
	if all := out + errOut; code != ExitNo || !strings.Contains(all, "Its MCP server py: uvx fetches mcp-server-fetch from PyPI") || strings.Contains(all, "its command: uvx") ||
		!strings.Contains(all, ". Install no-such-runtime-4417 and no-such-tool-5, or put them on PATH, and deal with what else is said above; then run `gemkit extensions sandbox srv-ext` again.") {
		t.Errorf("switch with two servers whose commands are nowhere: exit %d\n%s", code, all)
	}

	// Package-runner lines gemkit cannot pin: a shell command, and a
	// package from a git host (npx's own forms). Switched, nothing would
	// start them.
	m = strings.Replace(sandboxManifest, `"command": "node", "args": ["${extensionPath}/server.js"]`, `"command": "npx", "args": ["-c", "echo hi"]`, 1)
	m = strings.Replace(m, `"remote": {"httpUrl": "https://mcp.example.com/mcp"}`, `"gitpkg": {"command": "npx", "args": ["-y", "github:foo/bar"]}`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(m), 0o644)
	out, errOut, code = e.run("sandbox", "srv-ext")
	all = out + errOut
	if code != ExitNo || !strings.Contains(all, "not switched: gemkit mcp could not serve srv-ext's MCP servers") ||
		!strings.Contains(all, "Its MCP server memory (npx -c echo hi): ") || !strings.Contains(all, "Its MCP server gitpkg (npx -y github:foo/bar): ") ||
		!strings.Contains(all, "Those command lines are the extension author's to change (to npx -y PACKAGE, which gemkit pins); until then its servers stay Gemini CLI's.") ||
		strings.Contains(all, "Switched") || strings.Contains(all, "serves") {
		t.Errorf("switch with package-runner lines that cannot be pinned: exit %d\n%s", code, all)
	}
	if b, _ := os.ReadFile(settings); string(b) != userSettings {
		t.Errorf("the settings changed:\n%s", b)
	}
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(sandboxManifest), 0o644)

	// Switched, then its code edited: served as agreed to, from
	// gemkit's copy, and said what changed and how to run it.
	e.mustRun("sandbox", "srv-ext")
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// edited\n"), 0o644)
	const why = "Since you agreed, this file of the extension changed: server.js (changed)."
	for _, args := range [][]string{{"list"}, {"describe", "srv-ext"}, {"doctor"}} {
		out, _, _ := e.run(args...)
		if !strings.Contains(out, "served as you agreed to it on ") || !strings.Contains(out, "from gemkit's copy, not as it is now. "+why) || !strings.Contains(out, "To run it as it is now, agree to it: `gemkit extensions consent srv-ext --grant`") {
			t.Errorf("%v does not say the switched server is served as agreed to, what changed, and the fix:\n%s", args, out)
		}
	}
	if out := e.mustRun("list"); strings.Contains(out, "NOT SERVED") {
		t.Errorf("list says a server served from gemkit's copy is not served:\n%s", out)
	}
	// Its manifest edited, which the servers' commands are read from:
	// not served, and said where the person looks.
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(sandboxManifest+" "), 0o644)
	for _, args := range [][]string{{"list"}, {"describe", "srv-ext"}, {"doctor"}} {
		out, _, _ := e.run(args...)
		if !strings.Contains(out, "gemkit extensions consent srv-ext --grant") || strings.Contains(out, "from gemkit's copy") {
			t.Errorf("%v does not say the switched server is not served, and why:\n%s", args, out)
		}
	}
	if out := e.mustRun("list"); !strings.Contains(out, "NOT SERVED") {
		t.Errorf("list:\n%s", out)
	}
}
