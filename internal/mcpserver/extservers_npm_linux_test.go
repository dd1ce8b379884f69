package mcpserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
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

// linkNPMServers links the extension of npmManifest, with
// interop/mcp-servers' node_modules copied into it, and switches it to
// gemkit; it returns the path of the workspace file server-filesystem
// is asked to read.
func linkNPMServers(t *testing.T, f *fixture) string {
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
	f.link(t, "npmmcp", npmManifest, nil)
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
	gemkittest.SkipShort(t, "the real Gemini CLI 0.61 and three MCP servers from npm")
	f := newFixture(t)
	file := linkNPMServers(t, f)
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
	gemkittest.SkipShort(t, "the real Claude Code and three MCP servers from npm")
	claude := claudetest.Binary(t)
	gemkittest.Interop(t) // node, for the servers
	f := newFixture(t)
	file := linkNPMServers(t, f)
	seen := runSwitchedClaude(t, f, claude, npmServersProc,
		claudeCall{"mcp__gemkit__npmmcp_read_text_file", map[string]any{"path": file}, npmFileMarker},
		claudeCall{"mcp__gemkit__npmmcp_create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{npmObservation}}}}, npmObservation},
		claudeCall{"mcp__gemkit__npmmcp_echo", map[string]any{"message": npmEchoMarker}, npmEchoMarker})
	allSandboxed(t, seen, 3)
}
