package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestGeminiACP runs the scenario of TestNodeClient, where it applies,
// against the protocol's reference agent, the real `gemini --acp`
// (Gemini CLI 0.61.0) on the same scripted model, so that the client
// script and the assertions are checked against it and not only against
// gemkit: streamed text, a new file written through fs/write_text_file
// only after a permission request carrying a diff, a rejected edit, a
// tool of an MCP server passed in session/new, a cancel during a stalled
// model turn, nothing but JSON-RPC on stdout. Left out: reads (Gemini
// CLI's read_file reads the disk, not the client) and extension tools
// (gemkit's own). The client answers a missing file's read with empty
// text, since Gemini CLI cannot create a file after the error answer.
func TestGeminiACP(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json", "@agentclientprotocol/sdk")
	f := newFixture(t)
	newPath := filepath.Join(f.ws, "sub", "new.txt")
	a := filepath.Join(f.ws, "a.txt")
	f.model.Add(
		fakemodel.Text("Hello from the reference."),
		fakemodel.Call("write_file", map[string]any{"file_path": newPath, "content": newContent}),
		fakemodel.Text("Created."),
		fakemodel.Call("write_file", map[string]any{"file_path": a, "content": "gamma\n"}),
		fakemodel.Text("Understood."),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Text("Read."),
		fakemodel.Stalled(),
	)
	settings := map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"privacy": map[string]any{"usageStatisticsEnabled": false},
		"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	gemkittest.WriteFile(t, filepath.Join(f.home, ".gemini", "settings.json"), string(b))
	env := f.envMap()
	env["NO_COLOR"], env["CI"] = "1", "1"
	r := drive(t, plan{
		Command: node, Args: []string{filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), "--acp"},
		Env: env, Cwd: f.ws, TimeoutMs: 90000,
		FS: planFS{Read: true, Write: true, Missing: "empty"},
		// Gemini CLI also asks before an MCP server's tool.
		Permissions: []string{"allow_once", "reject_once", "allow_once"},
		MCPServers:  []any{map[string]any{"name": "gemkit", "command": f.bin, "args": []string{"mcp"}, "env": []any{}}},
		Prompts: []planPrompt{
			textPrompt("Say hello."), textPrompt("Create sub/new.txt."), textPrompt("Change a.txt."), textPrompt("Read the guide."),
			{Blocks: textPrompt("Think forever.").Blocks, CancelAfterMs: ms(800)},
		},
	})
	if r.Error != nil || r.SessionError != nil {
		t.Fatalf("error %+v, session/new %+v; prompts %+v, requests %+v, model requests %d", r.Error, r.SessionError, r.Prompts, r.Requests, len(f.model.Requests()))
	}
	if r.Init.ProtocolVersion != 1 {
		t.Errorf("protocolVersion %d", r.Init.ProtocolVersion)
	}
	r.checkEndsThenCancel(t, 4)
	var text strings.Builder
	for _, u := range r.updates(t) {
		if u.SessionUpdate == "agent_message_chunk" {
			text.WriteString(u.Content.Text)
		}
	}
	if !strings.Contains(text.String(), "Hello from the reference.") {
		t.Errorf("streamed text %q", text.String())
	}
	perms := r.requestsOf("session/request_permission")
	if len(perms) != 3 {
		t.Fatalf("%d permission requests: %s", len(perms), perms)
	}
	var perm struct {
		ToolCall struct {
			Kind    string `json:"kind"`
			Content []struct {
				Type    string `json:"type"`
				Path    string `json:"path"`
				NewText string `json:"newText"`
			} `json:"content"`
		} `json:"toolCall"`
	}
	json.Unmarshal(perms[0], &perm)
	if c := perm.ToolCall.Content; perm.ToolCall.Kind != "edit" || len(c) == 0 || c[len(c)-1].Type != "diff" || c[len(c)-1].Path != newPath || c[len(c)-1].NewText != newContent {
		t.Errorf("edit permission %s", perms[0])
	}
	r.checkOneWrite(t, newPath, newContent)
	if got, _ := os.ReadFile(a); string(got) != "alpha\nbeta\n" {
		t.Errorf("a.txt after rejection: %q", got)
	}
	turns := f.model.Turns()
	if len(turns) < 7 {
		t.Fatalf("%d model turns", len(turns))
	}
	if got := turnText(t, f.model, 4); !strings.Contains(got, "canceled by the user") {
		t.Errorf("the turn after the rejection: %s", got)
	}
	if got := turnText(t, f.model, 6); !strings.Contains(got, "The count tool repeats a word.") {
		t.Errorf("the turn after the MCP call does not carry its output: %s", got)
	}
}
