package codeintel

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// withUnsaved is a Source whose servers see a buffer not saved yet.
type withUnsaved struct {
	*fakeSource
	texts map[string]string
}

func (w withUnsaved) Unsaved(context.Context) (map[string]string, error) { return w.texts, nil }

// A declaration found in a buffer not saved is shown with its line as
// the buffer has it, not as the disk does.
func TestUnsavedLines(t *testing.T) {
	ws, f := shop(t)
	g := filepath.Join(ws, "greet", "greet.go")
	f.symbols = append(f.symbols, Symbol{Name: "Farewell", Kind: KindFunction, Container: "example.com/shop/greet", Location: Location{Path: g, Range: rng(23, 5, 13)}})
	buffer := strings.Repeat("\n", 23) + "func Farewell(name string) string { return \"Bye, \" + name }\n"
	src := withUnsaved{f, map[string]string{g: buffer}}
	tools := newTestTools(t, ws, src, Options{})
	text, isErr := tools.Call(context.Background(), ToolDefinition, json.RawMessage(`{"symbol":"Farewell"}`))
	if isErr || !strings.Contains(text, `greet/greet.go:24:6: func Farewell(name string) string { return "Bye, " + name }`) {
		t.Errorf("got (error %v):\n%s", isErr, text)
	}
}
