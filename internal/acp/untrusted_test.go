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

// fsInitLine initializes as a client that writes files itself
// (fs/write_text_file) and lets the agent read the disk.
const fsInitLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":true}}}}`

// clientTurn sends a prompt (id 3) and plays the client until its answer:
// onPermission is called with each permission request and returns the
// option chosen; each fs/write_text_file is written to disk, as an
// editor would, and returned.
func clientTurn(t *testing.T, a *rawAgent, session string, onPermission func(params json.RawMessage) string) (writes []string) {
	t.Helper()
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + session + `","prompt":[{"type":"text","text":"edit"}]}}`)
	for {
		m := a.next()
		switch m.Method {
		case "session/request_permission":
			choice := onPermission(m.Params)
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"` + choice + `"}}}`)
		case "fs/write_text_file":
			var w struct{ Path, Content string }
			json.Unmarshal(m.Params, &w)
			writes = append(writes, w.Path)
			os.WriteFile(w.Path, []byte(w.Content), 0o644)
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
		case "":
			if string(m.ID) == "3" {
				if m.Error != nil {
					t.Fatalf("prompt: %+v", m.Error)
				}
				return writes
			}
		}
	}
}

func openFS(t *testing.T, a *rawAgent, f *fixture) string {
	t.Helper()
	cwd, _ := json.Marshal(f.ws)
	a.send(fsInitLine)
	a.answer(1, nil)
	a.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	var sess struct{ SessionID string }
	if json.Unmarshal(a.answer(2, nil).Result, &sess); sess.SessionID == "" {
		t.Fatal("session/new gave no session")
	}
	return sess.SessionID
}

// TestEditFolderSwappedDuringPermission: while the person reviews an
// edit in the ACP client, a tool swaps the edited file's folder for a
// link out of the workspace. gemkit checks the folder through the
// workspace's Root right before asking the client to write: it does not
// ask, nothing lands outside, and the model is told why. Before, the
// client was asked to write the path resolved before the review, and
// followed the link.
func TestEditFolderSwappedDuringPermission(t *testing.T) {
	f := newFixture(t, fakemodel.Call("propose_edit", map[string]any{"path": "sub/notes.txt", "content": "accepted text\n"}), fakemodel.Text("OK."))
	gemkittest.WriteFile(t, filepath.Join(f.ws, "sub", "notes.txt"), "old\n")
	out := filepath.Join(f.root, "outside")
	gemkittest.WriteFile(t, filepath.Join(out, "notes.txt"), "the person's own\n")
	a := startRaw(t, f)
	id := openFS(t, a, f)
	writes := clientTurn(t, a, id, func(json.RawMessage) string {
		sub := filepath.Join(f.ws, "sub")
		if err := os.Rename(sub, sub+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(out, sub); err != nil {
			t.Fatal(err)
		}
		return "allow"
	})
	if len(writes) != 0 {
		t.Errorf("the client was asked to write %v", writes)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "notes.txt")); string(b) != "the person's own\n" {
		t.Fatalf("outside/notes.txt was written: %q", b)
	}
	if got := turnText(t, f.model, 1); !strings.Contains(got, "changed while the edit was reviewed") {
		t.Errorf("the model was told: %s", got)
	}
}

// TestProtectedEditAskedApart: an edit of .git/config (a protected path)
// is asked about in a permission request of its own — the title says it
// is protected, the reason comes before the diff, the option that writes
// names the file — and is written only once the person allows it.
func TestProtectedEditAskedApart(t *testing.T) {
	evil := "[core]\n\tfsmonitor = touch /tmp/pwned\n"
	f := newFixture(t,
		fakemodel.Call("propose_edit", map[string]any{"path": ".git/config", "content": evil}), fakemodel.Text("Rejected."),
		fakemodel.Call("propose_edit", map[string]any{"path": ".git/config", "content": evil}), fakemodel.Text("Written."))
	gemkittest.Git(t, f.ws, "init", "--quiet")
	config := filepath.Join(f.ws, ".git", "config")
	before, _ := os.ReadFile(config)
	a := startRaw(t, f)
	id := openFS(t, a, f)
	var asked []json.RawMessage
	ask := func(p json.RawMessage) string { asked = append(asked, p); return "reject" }
	if writes := clientTurn(t, a, id, ask); len(writes) != 0 {
		t.Fatalf("a rejected protected edit was written: %v", writes)
	}
	if b, _ := os.ReadFile(config); string(b) != string(before) {
		t.Fatalf(".git/config changed: %q", b)
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	var req struct {
		ToolCall struct {
			Title   string `json:"title"`
			Content []struct {
				Type    string `json:"type"`
				Content struct{ Text string }
			} `json:"content"`
		} `json:"toolCall"`
		Options []struct{ OptionID, Name string } `json:"options"`
	}
	json.Unmarshal(asked[0], &req)
	if !strings.Contains(req.ToolCall.Title, "protected") || len(req.ToolCall.Content) < 2 ||
		!strings.Contains(req.ToolCall.Content[0].Content.Text, "hooks, core.fsmonitor") || len(req.Options) == 0 ||
		!strings.Contains(req.Options[0].Name, "protected file .git/config") {
		t.Errorf("the permission request does not ask about the protected file in words: %s", asked[0])
	}
	a.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"again"}]}}`)
	for {
		m := a.next()
		if m.Method == "session/request_permission" {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
			continue
		}
		if m.Method == "fs/write_text_file" {
			var w struct{ Path, Content string }
			json.Unmarshal(m.Params, &w)
			if w.Path != config || w.Content != evil {
				t.Errorf("write %+v", w)
			}
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
			continue
		}
		if m.Method == "" && string(m.ID) == "4" {
			break
		}
	}
	if got := turnText(t, f.model, 3); !strings.Contains(got, "accepted the edit of .git/config") {
		t.Errorf("the model was told: %s", got)
	}
}
