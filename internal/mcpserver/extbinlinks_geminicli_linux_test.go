package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// binManifest starts its server through npm's .bin link, as a published
// package's command does.
const binManifest = `{"name": "binext", "version": "1.0.0", "description": "A server started through node_modules/.bin.",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/node_modules/.bin/fixture-server"]}}}`

// geminiOffline is the settings file of a Gemini CLI run offline against
// the scripted model (docs/real-peers-offline.md).
const geminiOffline = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}
`

// TestGeminiCLIInstalledBinLinks is the sixth newcomer tour's case: an
// extension installed with the real Gemini CLI 0.61's own `gemini
// extensions install ./dir` (offline, HOME in the test's folder) carries
// npm's .bin links rewritten as absolute links into the source folder
// (Node's fs.cp in its copyExtension), here in a temporary folder other
// programs write, where consent cannot bind them. Before, the switch said
// "served", and gemkit mcp then refused to start the server, saying so
// only on its stderr: the tools vanished from Gemini CLI. Now the switch
// makes the links relative again, as the copy meant, says so, and the
// server, started through its .bin link inside gemkit's sandbox, answers
// the model in Gemini CLI 0.61.
func TestGeminiCLIInstalledBinLinks(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	fixture := serverFixture(t)
	f := newFixture(t)
	src := filepath.Join(f.root, "src", "binext")
	writeFile(t, filepath.Join(src, "gemini-extension.json"), binManifest, 0o644)
	writeFile(t, filepath.Join(src, "node_modules", "fixture-server", "index.mjs"), fixture, 0o755)
	// As npm links a package's bin.
	if err := os.MkdirAll(filepath.Join(src, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../fixture-server/index.mjs", filepath.Join(src, "node_modules", ".bin", "fixture-server")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), geminiOffline, 0o600)
	cli := geminiJS(interop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gemini := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
		cmd.Dir, cmd.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1", geminiOneProcess)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := gemini("extensions", "install", src, "--consent"); err != nil {
		t.Fatalf("gemini extensions install: %v\n%s", err, out)
	}
	installed := filepath.Join(f.home, ".gemini", "extensions", "binext")
	link := filepath.Join(installed, "node_modules", ".bin", "fixture-server")
	if target, err := os.Readlink(link); err != nil || target != filepath.Join(src, "node_modules", "fixture-server", "index.mjs") {
		t.Fatalf("Gemini CLI's install no longer makes the .bin link absolute into the source (%q, %v): this test reproduces what it no longer does", target, err)
	}
	if out, err := gemini("mcp", "add", "-s", "user", "--trust", "gemkit", f.bin, "mcp"); err != nil {
		t.Fatalf("gemini mcp add: %v\n%s", err, out)
	}
	out, err := f.gemkit("extensions", "sandbox", "binext")
	if err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	for _, want := range []string{
		"1 link of the extension leads back into the folder it was copied from, " + src + " (node_modules/.bin/fixture-server -> " + filepath.Join(src, "node_modules", "fixture-server", "index.mjs") + ")",
		"Switched: Gemini CLI no longer starts srv",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	if target, err := os.Readlink(link); err != nil || target != "../fixture-server/index.mjs" {
		t.Errorf("the .bin link after the switch: %q, %v; want ../fixture-server/index.mjs", target, err)
	}
	// Nothing stands in the way of serving it any more: the person is
	// told nothing else in list and doctor.
	if out, _ := f.gemkit("extensions", "doctor"); strings.Contains(out, "does not serve") {
		t.Errorf("doctor says the switched server is not served:\n%s", out)
	}

	model := scriptedModel(t, fakemodel.Call("mcp_gemkit_binext_ok", map[string]any{}), fakemodel.Text("All done."))
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Check the binext server."), model)
	turns := wantTurns(t, model, 2, runErr, report)
	second, err := turns[1].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !responseContains(second, "mcp_gemkit_binext_ok", "ok") {
		t.Errorf("the server's answer did not reach the model: %+v\n%s", second.FunctionResponses(), report())
	}
}

// TestUnservedServerTold: a switched server that gemkit mcp cannot serve
// (here its extension's manifest was edited after the person agreed,
// as the tour's "linked server edited by its author": an edit of its
// code alone runs from gemkit's copy as agreed to,
// TestExtensionServerRunsAsAgreed) is told, not a vanished tool. list
// and doctor say it is not served and why; Gemini CLI 0.61
// and Claude Code 2.1.330, through the same `gemkit mcp` entry, get a
// placeholder tool in its place whose description names the changed
// file and the command that agrees again, and a call of it answers the
// same as a tool error, which reaches the model. Once the person
// agrees, the server's own tools are back.
func TestUnservedServerTold(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	claude := claudetest.Binary(t)
	fixture := serverFixture(t)
	f := newFixture(t)
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), geminiOffline, 0o600)
	const manifest = `{"name": "edited", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/server.mjs"]}}}`
	src := f.link(t, "edited", manifest, map[string]string{"server.mjs": fixture})
	if out, err := f.gemkit("extensions", "sandbox", "edited"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	// The author edits the manifest after the person agreed.
	writeFile(t, filepath.Join(src, "gemini-extension.json"), strings.Replace(manifest, `"version": "1.0.0",`, `"version": "1.0.0", "description": "Edited.",`, 1), 0o644)
	const why = "this file of the extension changed: gemini-extension.json (changed)"
	const agree = "gemkit extensions consent edited --grant"
	for _, args := range [][]string{{"extensions", "list"}, {"extensions", "doctor"}, {"extensions", "describe", "edited"}} {
		out, _ := f.gemkit(args...)
		if !strings.Contains(out, why) || !strings.Contains(out, agree) || !strings.Contains(out, "not serve") && !strings.Contains(out, "NOT SERVED") {
			t.Errorf("gemkit %s does not say the server is not served, and why:\n%s", strings.Join(args, " "), out)
		}
	}

	cli := geminiJS(interop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	add := exec.CommandContext(ctx, node, cli, "mcp", "add", "-s", "user", "--trust", "gemkit", f.bin, "mcp")
	add.Dir, add.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1", geminiOneProcess)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("gemini mcp add: %v\n%s", err, out)
	}
	const placeholder = "mcp_gemkit_edited_srv_unavailable"
	model := scriptedModel(t, fakemodel.Call(placeholder, map[string]any{}), fakemodel.Text("Told."))
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Use the edited extension's server."), model)
	turns := wantTurns(t, model, 2, runErr, report)
	first, _ := turns[0].Generate()
	if names := " " + strings.Join(first.FunctionNames(), " ") + " "; !strings.Contains(names, " "+placeholder+" ") || strings.Contains(names, "mcp_gemkit_edited_ok ") {
		t.Errorf("Gemini CLI does not offer the placeholder alone: %s", names)
	}
	var s string
	if decls := unquoteAll(first.Tools[0], &s); !strings.Contains(decls, why) || !strings.Contains(decls, agree) {
		t.Errorf("the placeholder's description does not say why, and what to do:\n%.3000s", decls)
	}
	second, _ := turns[1].Generate()
	if !responseContains(second, placeholder, why) || !responseContains(second, placeholder, agree) {
		t.Errorf("the placeholder's answer did not reach the model: %+v\n%s", second.FunctionResponses(), report())
	}

	// Claude Code, through the same server entry.
	name := "mcp__gemkit__edited_srv_unavailable"
	told := false
	cm := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		switch {
		case strings.Contains(r.LastUser(), why):
			told = told || strings.Contains(r.LastUser(), agree)
			return claudetest.Reply{Text: "The server is not running."}
		case r.HasTool(name):
			return claudetest.Reply{Tool: name, Input: map[string]any{}}
		default:
			return claudetest.LoadTool(name)
		}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), cm, gemkittest.ClosedPort(t), f.ws)
	cc := f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Use the edited extension's server.", env)
	if out, err := cc.CombinedOutput(); err != nil || !strings.Contains(string(out), "The server is not running.") || !told {
		t.Errorf("claude -p: %v (told %v)\n%s", err, told, out)
	}

	// Agreed again: the server's own tools are served.
	if out, err := f.gemkit("extensions", "consent", "edited", "--grant"); err != nil {
		t.Fatalf("consent --grant: %v\n%s", err, out)
	}
	if out, _ := f.gemkit("extensions", "doctor"); strings.Contains(out, "not serve") {
		t.Errorf("doctor still says the server is not served:\n%s", out)
	}
}
