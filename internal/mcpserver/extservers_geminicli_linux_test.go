package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// switchedManifest is an extension whose MCP servers Gemini CLI would
// start itself, unconfined, or connect to (REMOTEURL, a loopback server
// of the test's), and whose context file and custom command it loads.
const switchedManifest = `{"name": "realmcp", "version": "1.0.0", "description": "A real MCP server.",
 "mcpServers": {
  "memory": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-memory/dist/index.js"],
             "env": {"MEMORY_FILE_PATH": "$HOME/memory.jsonl"}},
  "farnotes": {"httpUrl": "REMOTEURL"}
 }}`

// contextMarker is a line of the extension's GEMINI.md.
const contextMarker = "The realmcp extension keeps the project's notes in its memory graph."

// notesCommand is the extension's custom command, commands/notes.toml in
// Gemini CLI's format; `/notes ARGS` submits its prompt with {{args}}
// replaced.
const notesCommand = `description = "Records a fact in the project's notes."
prompt = "Record in the realmcp notes that {{args}} sandboxes extension servers, then read the notes back."
`

// remoteAnswer is what the remote server's tool answers.
const remoteAnswer = "far-note-6127: the remote server answered"

// remoteNotes starts a Streamable HTTP MCP server on loopback with one
// tool, far_lookup; clients names the client (clientInfo.name) of every
// initialize it received.
func remoteNotes(t *testing.T) (url string, clients func() []string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "farnotes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "far_lookup", Description: "Looks the project up in the far notes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: remoteAnswer}}}, nil, nil
		})
	var mu sync.Mutex
	var names []string
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" {
				name := "(none)"
				if p.ClientInfo != nil {
					name = p.ClientInfo.Name
				}
				mu.Lock()
				names = append(names, name)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	hts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hts.Close)
	return hts.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
	}
}

// TestGeminiCLISwitchedServer runs the real Gemini CLI 0.61 (offline,
// against the scripted model) with an extension whose manifest starts
// server-memory and names a remote server (a loopback Streamable HTTP
// server of the test's), switched to gemkit (`gemkit extensions
// sandbox`), and gemkit mcp added the way its docs say (`gemini mcp add
// -s user --trust gemkit gemkit mcp`). The model calls both servers'
// tools through gemkit and their answers reach it; Gemini CLI offers no
// tool of its own copy of either server, starts no server process (every
// one seen in the run is one, inside gemkit's sandbox) and never
// connects to the remote server (only gemkit does); and Gemini CLI still
// loads the extension's context file and expands its custom command
// (`gemini -p "/notes ..."`), whose prompt is what the model receives.
func TestGeminiCLISwitchedServer(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-memory")); err != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", err)
	}
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	f := newFixture(t)
	dir := filepath.Join(f.root, "src", "realmcp")
	writeFile(t, filepath.Join(dir, "GEMINI.md"), "# realmcp\n\n"+contextMarker+"\n", 0o644)
	writeFile(t, filepath.Join(dir, "commands", "notes.toml"), notesCommand, 0o644)
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	remoteURL, remoteClients := remoteNotes(t)
	f.link(t, "realmcp", strings.Replace(switchedManifest, "REMOTEURL", remoteURL, 1), nil)

	// The person's settings, with a comment, then gemkit added by
	// Gemini CLI itself, then the switch: each keeps what the others
	// wrote.
	settings := filepath.Join(f.home, ".gemini", "settings.json")
	writeFile(t, settings, `{
  // Offline, against the scripted model.
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}
`, 0o600)
	cli := geminiJS(interop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	add := exec.CommandContext(ctx, node, cli, "mcp", "add", "-s", "user", "--trust", "gemkit", f.bin, "mcp")
	add.Dir, add.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1", geminiOneProcess)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("gemini mcp add: %v\n%s", err, out)
	}
	// The remote server is on loopback: allowed by its host and port.
	if out, err := f.gemkit("extensions", "sandbox", "realmcp", "--allow-host", strings.TrimPrefix(strings.TrimSuffix(remoteURL, "/mcp"), "http://")); err != nil || !strings.Contains(out, "Switched: Gemini CLI no longer starts memory nor connects to farnotes") {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(settings); !strings.Contains(string(b), `"excluded": ["farnotes", "memory"]`) || !strings.Contains(string(b), `"gemkit"`) {
		t.Fatalf("the settings after gemini mcp add and the switch:\n%s", b)
	}

	model := scriptedModel(t,
		fakemodel.Call("mcp_gemkit_realmcp_create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{"sandboxes extension servers"}}}}),
		fakemodel.Call("mcp_gemkit_realmcp_read_graph", map[string]any{}),
		fakemodel.Call("mcp_gemkit_realmcp_far_lookup", map[string]any{}),
		fakemodel.Text("All done."),
	)

	// Every server-memory process of the run, seen while it runs: its
	// pid, and whether it is inside gemkit's sandbox.
	stop := watchServers(f, "server-memory")

	// Gemini CLI expands a custom command given to -p as it does one typed
	// (handleSlashCommand in packages/cli/src/nonInteractiveCliCommands.ts,
	// with FileCommandLoader reading the extensions' commands folders).
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "/notes gemkit-4410"), model)
	seen := stop()
	turns := wantTurns(t, model, 4, runErr, report)
	checkSwitchedTurns(t, turns, report)
	// Gemini CLI checks mcp.excluded before it connects to any server, a
	// remote one too (isBlockedBySettings in McpClientManager.
	// maybeDiscoverMcpServer, packages/core/src/tools/mcp-client-manager.ts;
	// dist/src/tools/mcp-client-manager.js in @google/gemini-cli-core
	// 0.61.0): every client the remote server met is gemkit. Without the
	// name in mcp.excluded, it meets gemini-cli-mcp-client too.
	if got := remoteClients(); len(got) == 0 || strings.Join(got, ",") != strings.TrimSuffix(strings.Repeat("gemkit,", len(got)), ",") {
		t.Errorf("the remote server's clients were %v, want gemkit alone", got)
	}
	if _, err := os.Stat(filepath.Join(f.home, ".local", "share", "gemkit", "extension-data", "realmcp", "memory.jsonl")); err != nil {
		t.Errorf("server-memory's file is not in its data folder: %v", err)
	}

	oneSandboxed(t, seen)
}

// checkSwitchedTurns checks what Gemini CLI sent the model: gemkit's
// tools of the switched servers, none of its own copies, the
// extension's GEMINI.md and custom command, and each server's answer.
func checkSwitchedTurns(t *testing.T, turns []fakemodel.Request, report func() string) {
	first, err := turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	names := " " + strings.Join(first.FunctionNames(), " ") + " "
	for _, want := range []string{"mcp_gemkit_realmcp_create_entities", "mcp_gemkit_realmcp_read_graph", "mcp_gemkit_realmcp_far_lookup"} {
		if !strings.Contains(names, " "+want+" ") {
			t.Errorf("Gemini CLI did not offer %s; it offered:%s", want, names)
		}
	}
	if strings.Contains(names, "mcp_memory_") || strings.Contains(names, "mcp_farnotes_") {
		t.Errorf("Gemini CLI offers the tools of its own copy of a server:%s", names)
	}
	if !strings.Contains(first.Text(), contextMarker) {
		t.Errorf("Gemini CLI no longer loads the switched extension's GEMINI.md")
	}
	if text := first.Text(); !strings.Contains(text, "Record in the realmcp notes that gemkit-4410 sandboxes extension servers, then read the notes back.") || strings.Contains(text, "/notes") {
		t.Errorf("the model did not receive the custom command's expanded prompt:\n%.3000s", text)
	}
	second, _ := turns[1].Generate()
	if !responseContains(second, "mcp_gemkit_realmcp_create_entities", "sandboxes extension servers") {
		t.Errorf("the second request does not carry the server's answer: %+v\n%s", second.FunctionResponses(), report())
	}
	third, _ := turns[2].Generate()
	if !responseContains(third, "mcp_gemkit_realmcp_read_graph", "sandboxes extension servers") {
		t.Errorf("the third request does not carry the graph read back: %+v", third.FunctionResponses())
	}
	fourth, _ := turns[3].Generate()
	if !responseContains(fourth, "mcp_gemkit_realmcp_far_lookup", remoteAnswer) {
		t.Errorf("the fourth request does not carry the remote server's answer: %+v", fourth.FunctionResponses())
	}
}

// confinement says whether the process pid runs inside gemkit's sandbox:
// under a seccomp filter with no_new_privs (Landlock needs both), below
// a gemkit process (bin). Otherwise it says what it found. ok is false
// when the process, or an ancestor, ended before it could be read: a short-lived
// one (a helper of Chromium's) tells nothing either way, as one that
// starts and ends between two looks is not seen at all.
func confinement(pid, bin string) (how string, ok bool) {
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return "", false
	}
	field := func(name string) string {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if field("NoNewPrivs") != "1" || field("Seccomp") != "2" {
		return "NoNewPrivs " + field("NoNewPrivs") + ", Seccomp " + field("Seccomp"), true
	}
	for p, n := field("PPid"), 0; p != "" && p != "0" && n < 16; n++ {
		if exe, _ := os.Readlink(filepath.Join("/proc", p, "exe")); exe == bin {
			return "sandboxed", true
		}
		b, err := os.ReadFile(filepath.Join("/proc", p, "status"))
		if err != nil {
			return "", false // an ancestor ended while it was looked at
		}
		next := ""
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PPid:"); ok {
				next = strings.TrimSpace(v)
			}
		}
		if _, err := strconv.Atoi(next); err != nil {
			break
		}
		p = next
	}
	return "confined, but not below gemkit", true
}

// TestGeminiCLIRefusedExtensionQuestion runs the real Gemini CLI 0.61
// (offline, against the scripted model) with `gemkit mcp`: it declares
// roots and no elicitation (McpClient.connect in gemini-cli-core's
// dist/src/tools/mcp-client.js gives its client the roots capability
// alone), so an extension server's question during its call reaches no
// one, and the call's answer, which reaches the model, says in gemkit's
// words why. As root and as uid 65534.
func TestGeminiCLIRefusedExtensionQuestion(t *testing.T) {
	t.Parallel()
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
		f := newFixture(t)
		askingExtension(t, f)
		writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), geminiSettings, 0o600)
		if unprivileged {
			asUnprivileged(t, f)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		add := exec.CommandContext(ctx, node, geminiJS(interop), "mcp", "add", "-s", "user", "--trust", "gemkit", f.bin, "mcp")
		add.Dir, add.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1", geminiOneProcess)
		if out, err := f.asUser(add).CombinedOutput(); err != nil {
			t.Fatalf("gemini mcp add: %v\n%s", err, out)
		}
		model := scriptedModel(t, fakemodel.Call("mcp_gemkit_asker_ask", askArgs), fakemodel.Text("Not asked."))
		_, report, runErr := runHeadless(f.asUser(f.headlessGemini(ctx, node, interop, model.URL, "Ask me for a colour.")), model)
		turns := wantTurns(t, model, 2, runErr, report)
		second, err := turns[1].Generate()
		if err != nil {
			t.Fatal(err)
		}
		want := "gemkit did not pass on the question the extension asker's MCP server srv asked the person: the client that made the call (gemini-cli-mcp-client) declares no elicitation, so it cannot ask the person."
		if !responseContains(second, "mcp_gemkit_asker_ask", want) {
			t.Errorf("the model was not told why: %+v\n%s", second.FunctionResponses(), report())
		}
	})
}
