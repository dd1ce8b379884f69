package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// chromeDevToolsManifest is ChromeDevTools/chrome-devtools-mcp's
// gemini-extension.json as released: tag chrome-devtools-mcp-v1.7.0,
// commit 774d78f5eef5e610407a0c92fa6ec5ed74b027e8. Its server is the npm
// package chrome-devtools-mcp 1.7.0, which npx fetches; chromeDevTools
// starts the same package, pinned in interop/published, by its entry
// point, with the arguments a machine without Google Chrome and a
// display needs.
const chromeDevToolsManifest = `{
  "name": "chrome-devtools-mcp",
  "version": "1.7.0",
  "mcpServers": {
    "chrome-devtools": {
      "command": "npx",
      "args": [
        "chrome-devtools-mcp@1.7.0"
      ]
    }
  }
}
`

// chromeDevToolsServer is the manifest's server as the test starts it:
// node runs the pinned package's entry point from the extension's
// folder (no registry offline), and the server is told to start Debian's
// Chromium (--executablePath) without a display (--headless), in a
// profile of its own in the temporary folder (--isolated: the sandbox's
// private one), and without Chromium's own sandbox
// (--chromeArg=--no-sandbox), which needs new user namespaces or a
// setuid helper, both refused inside gemkit's.
func chromeDevToolsServer(chromium string) string {
	return `"chrome-devtools": {
      "command": "node",
      "args": [
        "${extensionPath}/node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js",
        "--executablePath", "` + chromium + `",
        "--headless", "--isolated", "--chromeArg=--no-sandbox"
      ]
    }`
}

// chromeMarker is the text of the workspace's page.
const chromeMarker = "chrome-marker-6172"

// chromium is Debian's Chromium (package chromium, which
// scripts/setup-and-test installs): its program, not /usr/bin/chromium,
// a shell script that sources /etc/chromium.d, which is not in the
// sandbox's view, and fails there. A machine without it fails the test
// with the command that installs it, as for any other tool the tests use.
func chromium(t *testing.T) string {
	t.Helper()
	const path = chromiumProc
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Debian's chromium is not installed (%v): run scripts/setup-and-test, or apt-get install -y chromium", err)
	}
	return path
}

// linkChromeDevTools installs the chrome-devtools-mcp extension from its
// published manifest around the pinned package, switched to gemkit with
// the switch's extra arguments, and writes the workspace's page; it
// returns the page's file:// URL.
func linkChromeDevTools(t *testing.T, f *fixture, chromium string, switchArgs ...string) string {
	t.Helper()
	// Chromium binds a Unix socket in a folder of its own in the
	// temporary folder (process_singleton_posix.cc), whose path must
	// fit in 107 bytes; the server's temporary folder is one gemkit
	// makes in its own: a short one here, as /tmp is.
	tmp, err := os.MkdirTemp("/tmp", "gk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	f.tmp = tmp
	pkg := filepath.Join(publishedModules(t, "chrome-devtools-mcp"), "chrome-devtools-mcp")
	dir := filepath.Join(f.root, "src", "chrome-devtools-mcp")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", pkg, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	published := `"chrome-devtools": {
      "command": "npx",
      "args": [
        "chrome-devtools-mcp@1.7.0"
      ]
    }`
	manifest := strings.Replace(chromeDevToolsManifest, published, chromeDevToolsServer(chromium), 1)
	if manifest == chromeDevToolsManifest {
		t.Fatal("the published manifest's server entry was not found to replace")
	}
	f.link(t, "chrome-devtools-mcp", manifest, nil)
	args := append([]string{"extensions", "sandbox", "chrome-devtools-mcp"}, switchArgs...)
	if out, err := f.gemkit(args...); err != nil || !strings.Contains(out, "Switched: Gemini CLI no longer starts chrome-devtools") {
		t.Fatalf("gemkit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	page := filepath.Join(f.ws, "page.html")
	writeFile(t, page, "<!doctype html><title>Notes</title><p>"+chromeMarker+"</p>\n", 0o644)
	return "file://" + page
}

// What command lines hold: the server's (Node's, whose title the server
// sets to chrome-devtools-mcp), those of every process the extension
// started (the server, its telemetry watchdog, Chromium's crash handler
// keeping its reports in the extension's data folder) and Chromium's.
const (
	chromeServerProc = "chrome-devtools-mcp\x00"
	chromeExtProc    = "chrome-devtools-mcp"
	chromiumProc     = "/usr/lib/chromium/chromium"
)

// watchChrome watches the processes of the extension and of Chromium
// until the returned func, which checks that there were some and that
// each ran inside gemkit's sandbox (the children of one seen, which
// watchServers leaves out, inherit its seccomp filter, no_new_privs and
// namespaces, which no process can drop).
func watchChrome(t *testing.T, f *fixture) (check func()) {
	stopExt, stopBrowser := watchServers(f, chromeExtProc), watchServers(f, chromiumProc)
	return func() {
		t.Helper()
		for what, seen := range map[string]map[string]string{"extension": stopExt(), "Chromium": stopBrowser()} {
			if len(seen) == 0 {
				t.Errorf("no %s process seen in the run", what)
			}
			for pid, how := range seen {
				if how != "sandboxed" {
					t.Errorf("%s process %s is not inside gemkit's sandbox: %s", what, pid, how)
				}
			}
		}
	}
}

// TestGeminiCLIPublishedChromeDevTools: the real Gemini CLI 0.61, offline
// against the scripted model, with the published chrome-devtools-mcp
// extension switched to gemkit and allowed Unix sockets. The model opens
// a page of the workspace (new_page, a file:// URL) and reads it
// (take_snapshot); Chromium, started by the server inside the sandbox,
// renders it, and the page's text reaches the model. Gemini CLI starts
// no copy of its own: the one server process of the run, and the
// extension's and Chromium's other processes, are inside the sandbox.
func TestGeminiCLIPublishedChromeDevTools(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Gemini CLI 0.61, chrome-devtools-mcp from npm and Chromium")
	browser := chromium(t)
	f := newFixture(t)
	url := linkChromeDevTools(t, f, browser, "--allow-unix-sockets")
	check := watchChrome(t, f)
	run := runSwitchedGemini(t, f, chromeServerProc, "Read the workspace's page.",
		fakemodel.Call("mcp_gemkit_chrome-devtools-mcp_new_page", map[string]any{"url": url}),
		fakemodel.Call("mcp_gemkit_chrome-devtools-mcp_take_snapshot", map[string]any{}),
		fakemodel.Text("All done."),
	)
	check()
	run.wantOffered(t, "mcp_gemkit_chrome-devtools-mcp_take_snapshot", "mcp_chrome-devtools_")
	run.wantAnswer(t, 2, "mcp_gemkit_chrome-devtools-mcp_take_snapshot", chromeMarker)
	run.wantOneSandboxed(t)
}

// TestClaudeCodePublishedChromeDevTools: the real Claude Code, through
// the same `gemkit mcp` entry, opens the workspace's page with the
// published chrome-devtools-mcp extension's tools and reads its text;
// the server runs once, in the sandbox, and so does Chromium.
func TestClaudeCodePublishedChromeDevTools(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Claude Code, chrome-devtools-mcp from npm and Chromium")
	claude := claudetest.Binary(t)
	browser := chromium(t)
	f := newFixture(t)
	url := linkChromeDevTools(t, f, browser, "--allow-unix-sockets")
	check := watchChrome(t, f)
	oneSandboxed(t, runSwitchedClaude(t, f, claude, chromeServerProc,
		claudeCall{"mcp__gemkit__chrome-devtools-mcp_new_page", map[string]any{"url": url}, ""},
		claudeCall{"mcp__gemkit__chrome-devtools-mcp_take_snapshot", map[string]any{}, chromeMarker}))
	check()
}

// toldOf reports whether a call's result tells the model that the
// sandbox refused chrome-devtools-mcp what (among, at most, its update
// check's host), and gives the one command that allows it with flag.
func toldOf(text, what, flag string) bool {
	const head, tail = "gemkit's sandbox refused this MCP server during the call: ", " The person (not the model) can allow it with: gemkit extensions sandbox chrome-devtools-mcp"
	_, rest, ok := strings.Cut(text, head)
	refused, command, ok2 := strings.Cut(rest, tail)
	if !ok || !ok2 {
		return false
	}
	// The update check, when it fell within the call, is told apart, as
	// what servers do in the background, and left out of the command.
	refused, bg, _ := strings.Cut(refused, " And, in the background, which servers do on their own and work without: ")
	update := regexp.MustCompile(`^(the host registry\.npmjs\.org \([^)]*\)|a connection to registry\.npmjs\.org:443) \(update check\)\.$`)
	if bg != "" && !update.MatchString(bg) {
		return false
	}
	flags, _, _ := strings.Cut(command, " (")
	return strings.TrimSuffix(refused, ".") == what && strings.TrimSpace(flags) == flag
}

// TestChromeDevToolsWithoutUnixSockets: switched without
// --allow-unix-sockets, the server starts but Chromium cannot (it
// creates Unix sockets at start); the call fails, and the person is told
// which extension and server were refused what, and the command that
// allows it, on gemkit mcp's stderr and by extensions describe, as the
// model is in the call's result.
func TestChromeDevToolsWithoutUnixSockets(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "chrome-devtools-mcp from npm and Chromium")
	browser := chromium(t)
	f := newFixture(t)
	url := linkChromeDevTools(t, f, browser)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	defer run.c.Close()
	if _, err := run.c.ListTools(ctx); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, run.stderr.String())
	}
	res, err := run.c.CallTool(ctx, "chrome-devtools-mcp_new_page", map[string]any{"url": url})
	if err != nil {
		t.Fatalf("new_page: %v\n%s", err, run.stderr.String())
	}
	allow := "gemkit extensions sandbox chrome-devtools-mcp --allow-unix-sockets"
	// The server's update check (a fetch of registry.npmjs.org, which it
	// makes from a process of its own after it starts) may fall within
	// the call: it is then refused and told too, apart, as what servers
	// do in the background, and left out of the command.
	if text := res.Text("\n"); !res.IsError || !toldOf(text, "a Unix socket", "--allow-unix-sockets") {
		t.Errorf("the model is not told of the refusal: %v %q\n%s", res.IsError, text, run.stderr.String())
	}
	person := "extension chrome-devtools-mcp's MCP server chrome-devtools was refused a Unix socket (Unix-domain sockets not allowed); to allow it: " + allow
	// gemkit mcp's stderr reaches the buffer through a pipe, maybe after
	// the call's answer.
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(run.stderr.String(), person) }) {
		t.Errorf("gemkit mcp's stderr does not say %q:\n%s", person, run.stderr.String())
	}
	if out, _ := f.gemkit("extensions", "describe", "chrome-devtools-mcp"); !strings.Contains(out, "extension chrome-devtools-mcp's MCP server chrome-devtools was refused") ||
		!strings.Contains(out, "- a Unix socket: Unix-domain sockets not allowed") || !strings.Contains(out, "to allow what it likely needs: "+allow+"\n") {
		t.Errorf("extensions describe does not tell of the Unix socket with %q:\n%s", allow, out)
	}
}
