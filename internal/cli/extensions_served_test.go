package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/geminisettings"
)

// miniServer is a stdio MCP server of one tool, in the shapes of MCP's
// specification (revision 2025-06-18: initialize, tools/list), for the
// extensions whose switch lists their servers as gemkit mcp does.
const miniServer = `const rl = require("node:readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "mini", version: "1" } } });
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "remember", description: "Remembers.", inputSchema: { type: "object" } }] } });
  send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
});
`

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
	os.WriteFile(filepath.Join(src, "server.js"), []byte(miniServer), 0o644)
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

// TestSwitchSaysServedOnlyOfWhatIsServed: the switch lists the servers
// it switched as gemkit mcp does, and says "gemkit mcp serves" only of
// those it listed, with their tools; one that cannot start is told at
// once, its cause first (Auth0's server: keytar's native addon), with
// what to do, and list, describe and doctor say it from what was kept.
// Fixed and switched again, it is served. The switch said "gemkit mcp
// serves it" of every server it took, and list and doctor nothing.
func TestSwitchSaysServedOnlyOfWhatIsServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "keyed")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "keyed", "version": "1.0.0",
 "mcpServers": {"auth": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`), 0o644)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("console.error('starting');\nthrow new Error('Failed to load keytar native addon');\n"), 0o644)
	e.mustRun("link", src, "--consent")
	const cause = "extension keyed's MCP server auth exited at once (exit status 1); it said: Error: Failed to load keytar native addon"
	out := e.mustRun("sandbox", "keyed")
	if !strings.Contains(out, "NOT SERVED: gemkit mcp could not serve auth, and Gemini CLI no longer starts it: "+cause) ||
		!strings.Contains(out, "`gemkit extensions sandbox keyed --off`") || strings.Contains(out, "gemkit mcp serves") {
		t.Errorf("the switch of a server that cannot start:\n%s", out)
	}
	for _, args := range [][]string{{"list"}, {"describe", "keyed"}, {"doctor"}} {
		out, _, _ := e.run(args...)
		if !strings.Contains(out, "the last time gemkit mcp started it (") || !strings.Contains(out, cause) ||
			!strings.Contains(out, "NOT SERVED") && !strings.Contains(out, "does not serve") {
			t.Errorf("%v does not say the server is not served, and why:\n%s", args, out)
		}
	}
	os.WriteFile(filepath.Join(src, "server.js"), []byte(miniServer), 0o644)
	out = e.mustRun("sandbox", "keyed")
	if !strings.Contains(out, "gemkit mcp serves auth (1 tool) in its sandbox, listed now.") || strings.Contains(out, "NOT SERVED") {
		t.Errorf("the switch of the server fixed:\n%s", out)
	}
	for _, args := range [][]string{{"list"}, {"describe", "keyed"}, {"doctor"}} {
		if out, _, _ := e.run(args...); strings.Contains(out, "NOT SERVED") || strings.Contains(out, "does not serve") {
			t.Errorf("%v still says the server is not served:\n%s", args, out)
		}
	}
	if out := e.mustRun("describe", "keyed"); !strings.Contains(out, "  auth: served by gemkit mcp: 1 tool, as it last listed them") {
		t.Errorf("describe does not say what gemkit mcp listed:\n%s", out)
	}
}

// TestSwitchRefusesWhatGemkitDoesNotLoad: an extension whose manifest
// gemkit refuses (a tool of its own key left incomplete, which Gemini
// CLI, not reading that key, loads all the same) is not switched: gemkit
// mcp would serve none of its servers while Gemini CLI no longer started
// them. Switched before its manifest went so, list, describe and doctor
// say it is not served, and why.
func TestSwitchRefusesWhatGemkitDoesNotLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Installed by Gemini CLI: its copy, and its install metadata.
	src := filepath.Join(e.home, ".gemini", "extensions", "gmp")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, ".gemini-extension-install.json"), []byte(`{"source": "https://github.com/example/gmp", "type": "git"}`), 0o644)
	const manifest = `{"name": "gmp", "version": "1.0.0",
 "mcpServers": {"maps": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`
	broken := strings.Replace(manifest, `"version": "1.0.0",`, `"version": "1.0.0", "tools": [{"name": "broken"}],`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(broken), 0o644)
	os.WriteFile(filepath.Join(src, "server.js"), []byte(miniServer), 0o644)
	const why = "extension gmp is not one gemkit loads (cannot be used: "
	out, errOut, code := e.run("sandbox", "gmp")
	if all := out + errOut; code != ExitNo || !strings.Contains(all, "not switched: gemkit mcp could not serve gmp's MCP servers") || !strings.Contains(all, why) ||
		!strings.Contains(all, "tools[0].executable: is missing") || strings.Contains(all, "Switched") {
		t.Errorf("the switch of an extension gemkit does not load: exit %d\n%s", code, all)
	}
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
	if out := e.mustRun("sandbox", "gmp"); !strings.Contains(out, "gemkit mcp serves maps (1 tool)") {
		t.Errorf("the switch of the extension fixed:\n%s", out)
	}
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(broken), 0o644)
	for _, args := range [][]string{{"list"}, {"describe", "gmp"}, {"doctor"}} {
		out, _, _ := e.run(args...)
		if !strings.Contains(out, why) || !strings.Contains(out, "NOT SERVED") && !strings.Contains(out, "does not serve") {
			t.Errorf("%v does not say the server is not served, and why:\n%s", args, out)
		}
	}
}
