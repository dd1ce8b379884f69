package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// npmManifest starts the three real servers of interop/mcp-servers,
// shipped in the extension's folder as a published extension ships its
// server. server-filesystem is given its working folder ("."), which
// gemkit makes the workspace; server-memory keeps its file in its HOME,
// the extension's data folder.
const npmManifest = `{"name": "npmmcp", "version": "1.0.0", "description": "The reference MCP servers.",
 "mcpServers": {
  "filesystem": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]},
  "memory": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-memory/dist/index.js"],
             "env": {"MEMORY_FILE_PATH": "$HOME/memory.jsonl"}},
  "everything": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]}
 }}`

// npmServersProc names, in a command line, each of the three servers of
// npmManifest and nothing else.
const npmServersProc = "npmmcp/node_modules/@modelcontextprotocol/server-"

// The texts each server's answer carries: a file of the workspace read
// by server-filesystem, an observation server-memory records, and the
// message server-everything echoes.
const (
	npmFileMarker  = "workspace-file-7731"
	npmObservation = "sandboxes extension servers"
	npmEchoMarker  = "echo-marker-2291"
)

// linkNPMServers links the extension of manifest (npmManifest or one
// like it), with
// interop/mcp-servers' node_modules copied into it, and switches it to
// gemkit; it returns the path of the workspace file server-filesystem
// is asked to read.
func linkNPMServers(t *testing.T, f *fixture, manifest string) string {
	t.Helper()
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-filesystem")); err != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", err)
	}
	// A checkout may link node_modules to another's: copy what it names,
	// since the link would lead out of the extension's folder.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	dir := filepath.Join(f.root, "src", "npmmcp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f.link(t, "npmmcp", manifest, nil)
	if out, err := f.gemkit("extensions", "sandbox", "npmmcp"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	file := filepath.Join(f.ws, "notes.txt")
	writeFile(t, file, npmFileMarker+"\n", 0o644)
	return file
}

// TestGeminiCLINPMServers: the real Gemini CLI 0.61, offline against
// the scripted model, with an extension that starts server-filesystem,
// server-memory and server-everything, switched to gemkit. The model
// calls one tool of each through gemkit mcp and each answer reaches it
// (the workspace's file, the recorded observation, the echo); Gemini CLI
// offers no tool of its own copies, and the run's three server processes
// are gemkit's, inside the sandbox.
func TestGeminiCLINPMServers(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Gemini CLI 0.61 and three MCP servers from npm")
	f := newFixture(t)
	file := linkNPMServers(t, f, npmManifest)
	run := runSwitchedGemini(t, f, npmServersProc, "Use the reference servers.",
		fakemodel.Call("mcp_gemkit_npmmcp_read_text_file", map[string]any{"path": file}),
		fakemodel.Call("mcp_gemkit_npmmcp_create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{npmObservation}}}}),
		fakemodel.Call("mcp_gemkit_npmmcp_echo", map[string]any{"message": npmEchoMarker}),
		fakemodel.Text("All done."),
	)
	for _, own := range []string{"mcp_filesystem_", "mcp_memory_", "mcp_everything_"} {
		run.wantOffered(t, "mcp_gemkit_npmmcp_read_text_file", own)
	}
	run.wantAnswer(t, 1, "mcp_gemkit_npmmcp_read_text_file", npmFileMarker)
	run.wantAnswer(t, 2, "mcp_gemkit_npmmcp_create_entities", npmObservation)
	run.wantAnswer(t, 3, "mcp_gemkit_npmmcp_echo", npmEchoMarker)
	allSandboxed(t, run.seen, 3)
	if _, err := os.Stat(filepath.Join(f.home, ".local", "share", "gemkit", "extension-data", "npmmcp", "memory.jsonl")); err != nil {
		t.Errorf("server-memory's file is not in its data folder: %v", err)
	}
}

// TestClaudeCodeNPMServers: the real Claude Code, through the same
// `gemkit mcp` entry, calls one tool of each of the three servers of
// TestGeminiCLINPMServers; each answer reaches the model, and each server
// runs once, in the sandbox.
func TestClaudeCodeNPMServers(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Claude Code and three MCP servers from npm")
	claude := claudetest.Binary(t)
	gemkittest.Interop(t) // node, for the servers
	f := newFixture(t)
	file := linkNPMServers(t, f, npmManifest)
	seen := runSwitchedClaude(t, f, claude, npmServersProc,
		claudeCall{"mcp__gemkit__npmmcp_read_text_file", map[string]any{"path": file}, npmFileMarker},
		claudeCall{"mcp__gemkit__npmmcp_create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{npmObservation}}}}, npmObservation},
		claudeCall{"mcp__gemkit__npmmcp_echo", map[string]any{"message": npmEchoMarker}, npmEchoMarker})
	allSandboxed(t, seen, 3)
}

// TestNPMServerRefusals: server-filesystem, told it may use the
// workspace and the whole home folder, still reads only what gemkit's
// sandbox shows it. Through
// the real gemkit binary, it reads the workspace but not ~/.ssh nor
// ~/.gemini (a closed path reads as absent, which is not told as a
// refusal); its write to the workspace is refused and told to the model
// and the person with the command that allows it, its write to the home
// folder fails with no command; after that command, run as the
// person runs it, the same call writes the workspace, without a restart
// of gemkit mcp, and the home folder stays closed.
func TestNPMServerRefusals(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "starts gemkit mcp and server-filesystem in the sandbox")
	gemkittest.Interop(t) // node, for the server
	f := newFixture(t)
	file := linkNPMServers(t, f, strings.Replace(npmManifest, `dist/index.js", "."]`, `dist/index.js", ".", "`+f.home+`"]`, 1))
	writeFile(t, filepath.Join(f.home, ".ssh", "id_ed25519"), "secret-5581", 0o600)
	writeFile(t, filepath.Join(f.home, ".gemini", "oauth_creds.json"), `{"refresh_token": "secret-5581"}`, 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	c, stderr := run.c, run.stderr
	defer c.Close()
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := c.CallTool(ctx, tool, args)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, stderr.String())
		}
		return res.Text("\n"), res.IsError
	}
	if text, isErr := call("npmmcp_read_text_file", map[string]any{"path": file}); isErr || !strings.Contains(text, npmFileMarker) {
		t.Errorf("reading the workspace: %v %q", isErr, text)
	}
	for _, p := range []string{".ssh/id_ed25519", ".gemini/oauth_creds.json"} {
		text, isErr := call("npmmcp_read_text_file", map[string]any{"path": filepath.Join(f.home, p)})
		if !isErr || strings.Contains(text, "secret-5581") || strings.Contains(text, "gemkit's sandbox refused") {
			t.Errorf("reading ~/%s: %v %q, want an error that tells no refusal", p, isErr, text)
		}
	}

	made := filepath.Join(f.ws, "made.txt")
	allow := "gemkit extensions sandbox npmmcp --allow-write workspace"
	write := func(p string) (string, bool) {
		return call("npmmcp_write_file", map[string]any{"path": p, "content": "written-3319"})
	}
	if text, isErr := write(made); !isErr || !strings.Contains(text, "gemkit's sandbox refused this MCP server during the call: a write to "+made+". The person (not the model) can allow it with: "+allow) {
		t.Errorf("the model is not told of the refused write: %v %q", isErr, text)
	}
	bashrc := filepath.Join(f.home, ".bashrc")
	// The server fails on the home folder it was told of and cannot list
	// (EACCES, "scandir"), which Landlock answers a read too: not told as
	// a refused write, and with no command, since none allows it.
	if text, isErr := write(bashrc); !isErr || strings.Contains(text, "can allow it") {
		t.Errorf("writing ~/.bashrc: %v %q", isErr, text)
	}
	person := "extension npmmcp's MCP server filesystem was refused a write to " + made
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		return strings.Contains(stderr.String(), person) && strings.Contains(stderr.String(), allow)
	}) {
		t.Errorf("gemkit mcp's stderr does not say %q with %q:\n%s", person, allow, stderr.String())
	}
	if out, _ := f.gemkit("extensions", "describe", "npmmcp"); !strings.Contains(out, "extension npmmcp's MCP server filesystem was refused") || !strings.Contains(out, "- a write to "+made+":") || !strings.Contains(out, allow) {
		t.Errorf("extensions describe does not tell of the write to %s with %q:\n%s", made, allow, out)
	}

	if out, err := f.gemkit(strings.Fields(allow)[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", allow, err, out)
	}
	// Polls, as a client that heard list_changed would: the server
	// starts again in the sandbox the command widened, and its tools are
	// called once they are listed again (a CI run's call between the
	// two got "unknown tool").
	if !gemkittest.Poll(time.Minute, 100*time.Millisecond, func() bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(tools, func(tl mcpclient.Tool) bool { return tl.Name == "npmmcp_write_file" }) {
			return false
		}
		res, err := c.CallTool(ctx, "npmmcp_write_file", map[string]any{"path": made, "content": "written-3319"})
		if err != nil && strings.Contains(err.Error(), "unknown tool") { // listed, then restarted again
			return false
		} else if err != nil {
			t.Fatalf("npmmcp_write_file: %v\n%s", err, stderr.String())
		}
		return !res.IsError
	}) {
		t.Fatalf("the server does not write %s a minute after %s\n%s", made, allow, stderr.String())
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "written-3319" {
		t.Errorf("%s after the allowed write: %q %v", made, b, err)
	}
	if _, isErr := write(bashrc); !isErr {
		t.Error("the server wrote ~/.bashrc after the workspace was allowed")
	}
	if _, err := os.Stat(bashrc); err == nil {
		t.Error("~/.bashrc exists")
	}
}

// TestCodexNPMServers: the real Codex CLI, with `gemkit mcp` as its MCP
// server, calls server-everything's echo of the switched extension of
// TestGeminiCLINPMServers (npmmcp_echo, in its mcp__gemkit namespace);
// the answer reaches the model, and the extension's servers run in the
// sandbox, once each.
func TestCodexNPMServers(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Codex CLI and three MCP servers from npm")
	gemkittest.Interop(t) // node, for the servers
	f := newFixture(t)
	linkNPMServers(t, f, npmManifest)
	api := codexCallOnce(t, "npmmcp_echo", `{"message":"`+npmEchoMarker+`"}`, "Echoed.")
	stop := watchServers(f, npmServersProc)
	out := runCodex(t, f, api, "Echo the marker.")
	seen := stop()
	wantCodexEcho(t, api, out)
	allSandboxed(t, seen, 3)
}

// wantCodexEcho checks that Codex asked api twice, the second time with
// server-everything's echo of npmEchoMarker (out is what Codex printed).
func wantCodexEcho(t *testing.T, api *responsesAPI, out string) {
	t.Helper()
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2\n%s", len(reqs), out)
	}
	if in, _ := json.Marshal(reqs[1]["input"]); !strings.Contains(string(in), "Echo: "+npmEchoMarker) {
		tools, _ := json.Marshal(reqs[0]["tools"])
		t.Errorf("server-everything's answer did not reach the model: %.2000s\ntools offered: %s\n%s", in[len(in)-min(len(in), 600):], tools, out)
	}
}

// slowManifest starts server-everything three seconds late: longer than
// the second Codex gives a server it does not require to list its tools
// before a turn.
const slowManifest = `{"name": "npmmcp", "version": "1.0.0", "description": "A reference MCP server that starts slowly.",
 "mcpServers": {
  "everything": {"command": "sh", "args": ["-c", "sleep 3; exec node \"$0\"", "${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]}
 }}`

// TestCodexKeptCatalog: Codex 0.169 offers a turn the tools of a server
// it does not require only when they are listed within a second
// (openai/codex#31641, list_all_tools_for_turn). With gemkit mcp set up
// without `required`, and a switched extension whose server takes three
// seconds to start, a gemkit mcp that listed the server before (another
// client's session) kept its catalog: the next one answers Codex's
// tools/list from there at once, the model calls server-everything's
// echo in the first turn, and the answer, from the server started behind
// the list, reaches it. Without the kept catalog the turn has none of
// the server's tools.
func TestCodexKeptCatalog(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Codex CLI and an MCP server from npm")
	gemkittest.Interop(t) // node, for the server
	f := newFixture(t)
	linkNPMServers(t, f, slowManifest)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	tools, err := before.c.ListTools(ctx)
	if err != nil || !slices.ContainsFunc(tools, func(tl mcpclient.Tool) bool { return tl.Name == "npmmcp_echo" }) {
		t.Fatalf("the first listing: %v\n%s", err, before.stderr.String())
	}
	before.c.Close()
	before.stdin.Close()
	before.cmd.Wait()

	api := codexCallOnce(t, "npmmcp_echo", `{"message":"`+npmEchoMarker+`"}`, "Echoed.")
	out := runCodexRequired(t, f, api, "Echo the marker.", false)
	wantCodexEcho(t, api, out)
}

// TestOpenCodeNPMServers: the real OpenCode, with gemkit mcp set up as
// docs/mcp.md says, calls server-everything's echo of the switched
// extension of TestGeminiCLINPMServers (gemkit_npmmcp_echo); the answer
// reaches the model, and the extension's servers run in the sandbox,
// once each.
func TestOpenCodeNPMServers(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real OpenCode and three MCP servers from npm")
	opencode := pinnedPeer(t, "opencode", "npm install --no-save", "OpenCode", "opencode-linux-x64/bin/opencode")
	gemkittest.Interop(t) // node, for the servers
	f := newFixture(t)
	linkNPMServers(t, f, npmManifest)
	model, err := fakemodel.StartOpenAI(fakemodel.Call("gemkit_npmmcp_echo", map[string]any{"message": npmEchoMarker}), fakemodel.Text("Echoed."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	stop := watchServers(f, npmServersProc)
	out := runOpenCode(t, f, opencode, model, "Echo the marker.")
	seen := stop()
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2\n%s", len(reqs), out)
	}
	second, err := reqs[1].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if res := second.ToolResults(); len(res) != 1 || !strings.Contains(res[0], "Echo: "+npmEchoMarker) {
		t.Errorf("server-everything's answer did not reach the model: %q\n%s", res, out)
	}
	allSandboxed(t, seen, 3)
}

// TestQwenCodeNPMServers: the real Qwen Code, headless (`qwen -p`), with
// gemkit mcp added as docs/mcp.md says (`qwen mcp add -s user gemkit
// gemkit mcp`), calls server-everything's echo of the switched extension
// of TestGeminiCLINPMServers against a scripted OpenAI-compatible model;
// the answer reaches the model, and the extension's servers run in the
// sandbox, once each.
func TestQwenCodeNPMServers(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Qwen Code and three MCP servers from npm")
	node, cli := gemkittest.QwenCode(t)
	f := newFixture(t)
	linkNPMServers(t, f, npmManifest)
	qwenHome := filepath.Join(f.home, ".qwen")
	gemkittest.WriteQwenSettings(t, qwenHome)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	add := exec.CommandContext(ctx, node, cli, "mcp", "add", "-s", "user", "gemkit", f.bin, "mcp")
	add.Dir, add.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("qwen mcp add: %v\n%s", err, out)
	}
	// Qwen Code 0.24 defers MCP tools: it names them in a reminder and
	// the model reviews one with tool_search and calls it with
	// tool_call (their descriptions, in the tools Qwen Code offers).
	const tool = "mcp__gemkit__npmmcp_echo"
	model, err := fakemodel.StartOpenAI(
		fakemodel.Call("tool_search", map[string]any{"query": "select:" + tool}),
		fakemodel.Call("tool_call", map[string]any{"name": tool, "arguments": map[string]any{"message": npmEchoMarker}}),
		fakemodel.Text("Echoed."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	stop := watchServers(f, npmServersProc)
	cmd := exec.CommandContext(ctx, node, cli, "-p", "Echo the marker.", "--yolo")
	cmd.Dir = f.ws
	cmd.Env = append(append(f.env(), "NO_COLOR=1", "CI=1", "QWEN_CODE_SUPPRESS_YOLO_WARNING=1"), gemkittest.QwenModelEnv(model.URL)...)
	out, err := cmd.CombinedOutput()
	seen := stop()
	if err != nil || !strings.Contains(string(out), "Echoed.") {
		t.Fatalf("qwen -p: %v\n%s", err, out)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests to the model, want 3\n%s", len(reqs), out)
	}
	var chats []fakemodel.ChatRequest
	for _, r := range reqs {
		c, err := r.Chat()
		if err != nil {
			t.Fatal(err)
		}
		chats = append(chats, c)
	}
	if !strings.Contains(chats[0].Text(), tool) {
		t.Errorf("Qwen Code does not name %s among its deferred tools:\n%.3000s", tool, chats[0].Text())
	}
	if res := chats[1].ToolResults(); len(res) != 1 || !strings.Contains(res[0], "npmmcp_echo") {
		t.Errorf("tool_search did not find %s: %q", tool, res)
	}
	if res := chats[2].ToolResults(); len(res) != 2 || !strings.Contains(res[1], "Echo: "+npmEchoMarker) {
		t.Errorf("server-everything's answer did not reach the model: %q\n%s", res, out)
	}
	allSandboxed(t, seen, 3)
}
