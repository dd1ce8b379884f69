package acp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// newContent is written byte for byte: no final newline, CRLF, non-ASCII.
const newContent = "première ligne\r\nsecond line ✓"

// TestNodeClient drives `gemkit acp` with the protocol's TypeScript
// client library through every item the editor integration rests on.
// Turn by turn: streamed text; a read answered from the editor's unsaved
// buffer; a new file written only after permission, through
// fs/write_text_file; a rejected edit; an extension tool whose files
// changed since consent, asked about again, run in the sandbox; a tool of
// an MCP server passed in session/new; a cancel during a model turn that
// never answers.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		fakemodel.Text("Hello from gemkit."),
		fakemodel.Call("read_file", map[string]any{"path": "a.txt"}),
		fakemodel.Text("It is the unsaved text."),
		fakemodel.Call("propose_edit", map[string]any{"path": "sub/new.txt", "content": newContent}),
		fakemodel.Text("Created."),
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "gamma\n"}),
		fakemodel.Text("Understood."),
		fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 2}),
		fakemodel.Text("Counted."),
		fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 3}),
		fakemodel.Text("Counted again."),
		fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 4}),
		fakemodel.Text("Counted once more."),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Text("Read."),
		fakemodel.Stalled(),
	)
	// The tool changed since the person agreed: it must ask again.
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), `printf '{"word":"%s","times":%s,"files":"%s"}\n' "$2" "$4" "$(ls | tr '\n' ' ')"`+"\n\n")
	os.Chmod(filepath.Join(f.src, "tools", "count.sh"), 0o755)
	a := filepath.Join(f.ws, "a.txt")
	env := f.envMap()
	r := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: env, Cwd: f.ws,
		FS:          planFS{Read: true, Write: true, Missing: "error", Buffers: map[string]string{a: "unsaved buffer text\n"}},
		Permissions: []string{"allow_once", "reject_once", "allow_once", "allow_always"},
		MCPServers:  []any{map[string]any{"name": "gemkit", "command": f.bin, "args": []string{"mcp"}, "env": []any{}}},
		Prompts: []planPrompt{
			textPrompt("Say hello."), textPrompt("What does a.txt say?"), textPrompt("Create sub/new.txt."),
			textPrompt("Change a.txt."), textPrompt("Count hi twice."), textPrompt("Count again."), textPrompt("Count once more."),
			textPrompt("Read the guide."),
			{Blocks: textPrompt("Think forever.").Blocks, CancelAfterMs: ms(800)},
		},
	})
	if r.Error != nil || r.SessionError != nil {
		t.Fatalf("error %+v, session/new %+v", r.Error, r.SessionError)
	}
	nodeInitialized(t, r)
	nodeToolCalls(t, r, a)
	// The read went through the client, and the model saw its buffer.
	if reads := r.requestsOf("fs/read_text_file"); len(reads) == 0 || !strings.Contains(string(reads[0]), `"path":"`+a+`"`) {
		t.Errorf("fs/read_text_file requests %s", reads)
	}
	if got := turnText(t, f.model, 2); !strings.Contains(got, "unsaved buffer text") || strings.Contains(got, "alpha") {
		t.Errorf("turn 3 does not carry the client's buffer: %s", got)
	}

	perms := r.requestsOf("session/request_permission")
	if len(perms) != 4 {
		t.Fatalf("%d permission requests: %s", len(perms), perms)
	}
	nodeNewFile(t, r, f, perms[0])
	nodeRejectedEdit(t, f, perms[1], a)
	nodeExtensionTool(t, f, perms[2])
	nodeAllowedAlways(t, f, perms[3])
}

// editPermission is what a session/request_permission for an edit says.
type editPermission struct {
	ToolCall struct {
		ToolCallID string `json:"toolCallId"`
		Kind       string `json:"kind"`
		Content    []struct {
			Type    string  `json:"type"`
			Path    string  `json:"path"`
			OldText *string `json:"oldText"`
			NewText string  `json:"newText"`
		} `json:"content"`
	} `json:"toolCall"`
}

// nodeInitialized: initialize answered protocol 1 with gemkit's
// capabilities and auth methods; every prompt ended, the last
// cancelled, and the agent exited cleanly when stdin closed.
func nodeInitialized(t *testing.T, r result) {
	if r.Init.ProtocolVersion != 1 {
		t.Errorf("protocolVersion %d", r.Init.ProtocolVersion)
	}
	var caps struct {
		LoadSession        bool `json:"loadSession"`
		PromptCapabilities struct {
			EmbeddedContext bool `json:"embeddedContext"`
			Image           bool `json:"image"`
		} `json:"promptCapabilities"`
	}
	json.Unmarshal(r.Init.AgentCapabilities, &caps)
	if !caps.LoadSession || !caps.PromptCapabilities.EmbeddedContext || caps.PromptCapabilities.Image {
		t.Errorf("capabilities %s", r.Init.AgentCapabilities)
	}
	if len(r.Init.AuthMethods) != 2 || r.Init.AuthMethods[0].Type != "env_var" {
		t.Errorf("authMethods %+v", r.Init.AuthMethods)
	}
	r.checkEndsThenCancel(t, 8)
	if r.Exit.Code == nil || *r.Exit.Code != 0 {
		t.Errorf("exit %+v after stdin closed", r.Exit)
	}
}

// nodeToolCalls: the text streamed, and each tool call is reported
// with its kind (a read with its location) and ended completed.
func nodeToolCalls(t *testing.T, r result, a string) {
	ups := r.updates(t)
	var text strings.Builder
	kinds := map[string]string{}
	titles := map[string]string{}
	final := map[string]string{}
	for _, u := range ups {
		switch u.SessionUpdate {
		case "agent_message_chunk":
			text.WriteString(u.Content.Text)
		case "tool_call":
			kinds[u.ToolCallID], titles[u.ToolCallID] = u.Kind, u.Title
			if u.Kind == "read" && (len(u.Locations) != 1 || u.Locations[0].Path != a) {
				t.Errorf("read tool call locations %+v", u.Locations)
			}
		case "tool_call_update":
			final[u.ToolCallID] = u.Status
		}
	}
	if !strings.Contains(text.String(), "Hello from gemkit.") {
		t.Errorf("streamed text %q", text.String())
	}
	wantCalls := map[string][2]string{
		"call_1": {"read", "completed"}, "call_2": {"edit", "completed"}, "call_3": {"edit", "completed"},
		"call_4": {"other", "completed"}, "call_5": {"other", "completed"}, "call_6": {"other", "completed"}, "call_7": {"other", "completed"},
	}
	for id, w := range wantCalls {
		if kinds[id] != w[0] || final[id] != w[1] {
			t.Errorf("%s (%s): kind %q status %q, want %v", id, titles[id], kinds[id], final[id], w)
		}
	}
}

// nodeNewFile: the new file is asked for with a diff first (perm), then
// written by the client.
func nodeNewFile(t *testing.T, r result, f *fixture, perm json.RawMessage) {
	var p editPermission
	json.Unmarshal(perm, &p)
	newPath := filepath.Join(f.ws, "sub", "new.txt")
	if c := p.ToolCall.Content; p.ToolCall.Kind != "edit" || len(c) != 1 || c[0].Type != "diff" || c[0].Path != newPath || c[0].NewText != newContent || c[0].OldText != nil {
		t.Errorf("edit permission %s", perm)
	}
	r.checkOneWrite(t, newPath, newContent)
	order := []string{}
	for _, q := range r.Requests {
		if q.Method != "fs/read_text_file" {
			order = append(order, q.Method)
		}
	}
	if len(order) < 2 || order[0] != "session/request_permission" || order[1] != "fs/write_text_file" {
		t.Errorf("request order %v", order)
	}
}

// nodeRejectedEdit: the rejected edit (asked with perm) writes nothing,
// and the model is told.
func nodeRejectedEdit(t *testing.T, f *fixture, perm json.RawMessage, a string) {
	var p editPermission
	json.Unmarshal(perm, &p)
	if c := p.ToolCall.Content; len(c) != 1 || c[0].OldText == nil || *c[0].OldText != "unsaved buffer text\n" || c[0].NewText != "gamma\n" {
		t.Errorf("rejected edit's permission %s", perm)
	}
	if got, _ := os.ReadFile(a); string(got) != "alpha\nbeta\n" {
		t.Errorf("a.txt after rejection: %q", got)
	}
	if got := turnText(t, f.model, 6); !strings.Contains(got, "rejected the edit of a.txt") {
		t.Errorf("turn 7 does not say the edit was rejected: %s", got)
	}
}

// nodeExtensionTool: the extension tool asked (perm), naming the file
// changed since consent before its permissions, ran, and its output
// reached the model; so did the MCP server's tool, offered and called.
func nodeExtensionTool(t *testing.T, f *fixture, perm json.RawMessage) {
	if p := string(perm); !strings.Contains(p, "this file of the extension changed: tools/count.sh (changed).") || !strings.Contains(p, `"allow_always"`) || !strings.Contains(p, "read") {
		t.Errorf("extension permission %s", p)
	}
	if got := turnText(t, f.model, 8); !strings.Contains(got, `{\"word\":\"hi\",\"times\":2,\"files\":\"a.txt sub \"}`) {
		t.Errorf("turn 9 does not carry the tool's output: %s", got)
	}
	// The MCP server's tool was offered and called.
	first, _ := f.model.Turns()[0].Generate()
	if names := strings.Join(first.FunctionNames(), " "); !strings.Contains(names, "mcp_gemkit_read_doc") || !strings.Contains(names, "demo_count") {
		t.Errorf("offered tools: %s", names)
	}
	if got := turnText(t, f.model, 14); !strings.Contains(got, "The count tool repeats a word.") {
		t.Errorf("turn 15 does not carry the MCP tool's output: %s", got)
	}
}

// nodeAllowedAlways: allowed once, the tool asked again (perm); allowed
// always, it did not ask a third time, and the consent is the one
// `gemkit extensions run --consent` records: `gemkit run`, which never
// asks, runs it.
func nodeAllowedAlways(t *testing.T, f *fixture, perm json.RawMessage) {
	var again struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
	}
	json.Unmarshal(perm, &again)
	if again.ToolCall.ToolCallID != "call_5" {
		t.Errorf("the second extension permission request is for %s, want call_5", again.ToolCall.ToolCallID)
	}
	if got := turnText(t, f.model, 12); !strings.Contains(got, `\"times\":4`) {
		t.Errorf("turn 13 does not carry the third run's output: %s", got)
	}
	f.model.Add(fakemodel.Call("demo_count", map[string]any{"word": "yo", "times": 1}), fakemodel.Text("Done."))
	run := exec.Command(f.bin, "run", "--json", "--no-ide", "count")
	run.Dir, run.Env = f.ws, f.env()
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `{\"word\":\"yo\",\"times\":1`) {
		t.Errorf("gemkit run after allow always: %v\n%s", err, out)
	}
}

// TestMissingFile: a client may answer the read of a file that does not
// exist with "Resource not found" or with empty text; either way the
// model is told it does not exist and creating it works (Gemini CLI 0.61
// fails to create it after the error answer). The prompt's linked and
// embedded files reach the model inline.
//
// A client that offers no fs methods ("disk"): gemkit reads the disk and
// writes the accepted file itself, atomically.
func TestMissingFile(t *testing.T) {
	t.Parallel()
	for _, missing := range []string{"error", "empty", "disk"} {
		t.Run(missing, func(t *testing.T) {
			viaClient := missing != "disk"
			f := newFixture(t,
				fakemodel.Call("read_file", map[string]any{"path": "notes/todo.md"}),
				fakemodel.Call("propose_edit", map[string]any{"path": "notes/todo.md", "content": "- one\n"}),
				fakemodel.Text("Created."),
			)
			env := f.envMap()
			a := filepath.Join(f.ws, "a.txt")
			// The client's folder goes through a symbolic link, as /tmp
			// does on macOS: the files it is asked about are named under
			// it, so that it finds its buffers.
			cwd := f.ws
			if missing == "error" {
				cwd = filepath.Join(f.root, "link")
				if err := os.Symlink(f.ws, cwd); err != nil {
					t.Fatal(err)
				}
			}
			r := drive(t, plan{
				Command: f.bin, Args: []string{"acp"}, Env: env, Cwd: cwd,
				FS:          planFS{Read: viaClient, Write: viaClient, Missing: missing},
				Permissions: []string{"allow_once"},
				Prompts: []planPrompt{{Blocks: []any{
					map[string]any{"type": "text", "text": "Start a todo list."},
					map[string]any{"type": "resource_link", "name": "a.txt", "uri": "file://" + a},
					map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///elsewhere/b.md", "text": "embedded text", "mimeType": "text/markdown"}},
				}}},
			})
			if len(r.Prompts) != 1 || r.Prompts[0].StopReason != "end_turn" {
				t.Fatalf("prompts %+v", r.Prompts)
			}
			first := turnText(t, f.model, 0)
			for _, want := range []string{"Start a todo list.", "Content of " + a + ":\n```\nalpha\nbeta\n```", "Content of /elsewhere/b.md:\n```\nembedded text\n```"} {
				if !strings.Contains(first, want) {
					t.Errorf("the first request lacks %q:\n%s", want, first)
				}
			}
			if got := turnText(t, f.model, 1); !strings.Contains(got, "read notes/todo.md: no such file") {
				t.Errorf("the model was told: %s", got)
			}
			if got, err := os.ReadFile(filepath.Join(f.ws, "notes", "todo.md")); err != nil || string(got) != "- one\n" {
				t.Errorf("todo.md %q %v", got, err)
			}
			if fsCalls := len(r.requestsOf("fs/read_text_file")) + len(r.requestsOf("fs/write_text_file")); (fsCalls > 0) != viaClient {
				t.Errorf("%d fs requests, client offers fs: %v", fsCalls, viaClient)
			}
			for _, q := range r.Requests {
				var p struct{ Path string }
				if json.Unmarshal(q.Params, &p); strings.HasPrefix(q.Method, "fs/") && !strings.HasPrefix(p.Path, cwd+string(filepath.Separator)) {
					t.Errorf("%s of %s, not under the client's folder %s", q.Method, p.Path, cwd)
				}
			}
		})
	}
}
