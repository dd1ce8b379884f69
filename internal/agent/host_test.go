package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// viewHost is a Host with a view of its own, as an editor is: buffers
// that differ from the disk, writes it keeps, and one of the two answers
// an editor may give for a file that does not exist.
type viewHost struct {
	agent.YesReviewer
	buffers    map[string]string
	missingErr bool
	writes     map[string]string
}

func (h *viewHost) ReadTextFile(_ context.Context, abs string) (string, bool, error) {
	if b, ok := h.buffers[abs]; ok {
		return b, true, nil
	}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if h.missingErr {
			return "", true, fmt.Errorf("editor: %w", fs.ErrNotExist)
		}
		return "", true, nil
	}
	return string(data), true, err
}

func (h *viewHost) WriteTextFile(_ context.Context, abs, content string) (bool, error) {
	h.writes[abs] = content
	return true, nil
}

func (h *viewHost) AllowTool(context.Context, toolrun.ConsentRequest) (bool, error) {
	return false, nil
}

// extraTools is a ToolSource with one tool of its own, which a model may
// also call echo (as an MCP tool by its own name), and one whose name a
// built-in tool already has.
type extraTools struct{ calls []string }

func (e *extraTools) ShortName(short string) []string {
	if short == "echo" {
		return []string{"extra_echo"}
	}
	return nil
}

func (e *extraTools) Decls() []model.ToolDecl {
	obj := map[string]any{"type": "object"}
	return []model.ToolDecl{{Name: "extra_echo", Description: "Echoes.", Schema: obj}, {Name: "read_file", Description: "Shadowed.", Schema: obj}}
}

func (e *extraTools) Call(_ context.Context, name string, args json.RawMessage) (string, bool, error) {
	e.calls = append(e.calls, name)
	return "echo " + string(args), false, nil
}

// TestHostView: with a host that has a view of its own, read_file and the
// old text of an edit come from it, an accepted edit is written through it
// and not to disk, a missing file reads as missing whichever answer the
// host gives, and a ToolSource's tools are offered beside the built-in
// ones, a name already taken left out.
func TestHostView(t *testing.T) {
	for _, missingErr := range []bool{false, true} {
		t.Run(fmt.Sprintf("missingErr=%v", missingErr), func(t *testing.T) {
			ws := t.TempDir()
			a := filepath.Join(ws, "a.txt")
			os.WriteFile(a, []byte("disk\n"), 0o644)
			srv := startOpenAI(t,
				fakemodel.Call("read_file", map[string]any{"path": "a.txt"}),
				fakemodel.Call("read_file", map[string]any{"path": "gone.txt"}),
				fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "search": "buffer", "replace": "edited"}),
				fakemodel.Call("propose_edit", map[string]any{"path": "new.txt", "content": "fresh\n"}),
				fakemodel.Call("extra_echo", map[string]any{"x": 1}),
				fakemodel.Call("echo", map[string]any{"x": 2}),
				fakemodel.Text("Done."),
			)
			m, err := model.Open(context.Background(), model.Config{BaseURL: srv.URL + "/v1", Model: "m"}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			h := &viewHost{buffers: map[string]string{a: "buffer\n"}, missingErr: missingErr, writes: map[string]string{}}
			extra := &extraTools{}
			ag := &agent.Agent{Model: m, Workspace: ws, Host: h, Tools: []agent.ToolSource{extra}}
			if out := ag.Run(context.Background(), "go"); out.Status != agent.Done {
				t.Fatalf("%+v", out)
			}
			var results []string
			for _, msg := range ag.History() {
				for _, r := range msg.Results {
					results = append(results, r.Text)
				}
			}
			if len(results) != 6 || results[0] != "buffer\n" || results[1] != "read gone.txt: no such file" ||
				!strings.Contains(results[2], "accepted") || !strings.Contains(results[3], "accepted") || results[4] != `echo {"x":1}` || results[5] != `echo {"x":2}` {
				t.Errorf("results %q", results)
			}
			newPath := filepath.Join(ws, "new.txt")
			if h.writes[a] != "edited\n" || h.writes[newPath] != "fresh\n" || len(h.writes) != 2 {
				t.Errorf("writes through the host %q", h.writes)
			}
			if got, _ := os.ReadFile(a); string(got) != "disk\n" {
				t.Errorf("the disk was written: %q", got)
			}
			if _, err := os.Stat(newPath); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("new.txt is on disk: %v", err)
			}
			first, _ := srv.Requests()[0].Chat()
			var names []string
			for _, tool := range first.Tools {
				fn, _ := tool["function"].(map[string]any)
				names = append(names, fmt.Sprint(fn["name"]))
			}
			if got := strings.Join(names, " "); got != "read_file list_files propose_edit extra_echo" {
				t.Errorf("tools offered: %s", got)
			}
			if strings.Join(extra.calls, " ") != "extra_echo extra_echo" {
				t.Errorf("extra calls %v", extra.calls)
			}
		})
	}
}
