package mcpserver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// oneSymbol is a Source whose workspace declares one function, Greet.
type oneSymbol struct {
	codeintel.Source
	ws string
}

func (o oneSymbol) WorkspaceSymbols(context.Context, string) ([]codeintel.Symbol, error) {
	return []codeintel.Symbol{{Name: "Greet", Kind: codeintel.KindFunction, Location: codeintel.Location{Path: filepath.Join(o.ws, "greet.go"),
		Range: codeintel.Range{Start: codeintel.Position{Line: 2, Character: 5}}}}}, nil
}

func (oneSymbol) Status(context.Context, string) (codeintel.Status, error) {
	return codeintel.Status{}, nil
}

func (oneSymbol) DocumentSymbols(context.Context, string) ([]codeintel.Symbol, error) {
	return nil, nil
}

// TestCodeIntelTools: with CodeIntel, the code-intelligence tools are
// listed (read-only, closed-world), answered, and named in the
// instructions; an extension tool of the same name gives way.
func TestCodeIntelTools(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeTree(t, ws, map[string]string{"greet.go": "package x\n\nfunc Greet() {}\n"})
	src := filepath.Join(t.TempDir(), "code")
	writeTree(t, src, map[string]string{
		"gemini-extension.json": `{"name": "code", "version": "1.0.0", "tools": [{"name": "definition", "description": "d", "executable": "d.sh", "runtime": "shell"}]}`,
		"d.sh":                  "echo hi\n",
	})
	st := extension.OpenStore(home).WithWorkspace(ws)
	if _, err := st.Link(context.Background(), src, func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	tools, err := codeintel.NewTools(oneSymbol{ws: real}, ws, codeintel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	s, err := New(Config{Source: disclosure.StoreSource(st), Runner: &toolrun.Runner{}, CodeIntel: tools})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct {
			Name        string
			Annotations struct{ ReadOnlyHint, OpenWorldHint *bool }
		} `json:"tools"`
	}
	json.Unmarshal(rpc(t, s, "tools/list", map[string]any{}), &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if strings.HasPrefix(tl.Name, "code_") && (tl.Annotations.ReadOnlyHint == nil || !*tl.Annotations.ReadOnlyHint || *tl.Annotations.OpenWorldHint) {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
	}
	if got := strings.Join(names, " "); got != "code_calls code_definition code_diagnostics code_hover code_implementations code_references code_symbols code_type_definition read_doc" {
		t.Errorf("tools: %s", got)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	json.Unmarshal(rpc(t, s, "tools/call", map[string]any{"name": "code_definition", "arguments": map[string]any{"symbol": "Greet"}}), &res)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Greet (function, greet.go:3:6) is defined at:\ngreet.go:3:6: func Greet() {}" {
		t.Errorf("call: %+v", res)
	}
	json.Unmarshal(rpc(t, s, "tools/call", map[string]any{"name": "code_definition", "arguments": map[string]any{"symbol": "x", "file": "../x"}}), &res)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "is outside the workspace") {
		t.Errorf("bad input: %+v", res)
	}
	if !strings.Contains(s.Instructions(), codeintel.Instructions) {
		t.Errorf("instructions: %q", s.Instructions())
	}
}
