package codeintel

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// locatorSource is the fake Source that is also a Locator, as
// internal/lspsource's is, answering type definitions as gopls v0.23.0
// does on the fixture (store.New's result type is Store).
type locatorSource struct {
	*fakeSource
	locs    map[DocPos][]Location
	methods []string
}

func (l *locatorSource) Locations(_ context.Context, method string, at DocPos) ([]Location, error) {
	l.mu.Lock()
	l.methods = append(l.methods, method)
	l.mu.Unlock()
	return l.locs[at], nil
}

// TestLocating: a question of the table whose answer is locations is
// asked through the Locator by its LSP method, and a Source that is not
// one is said not to offer it.
func TestLocating(t *testing.T) {
	ws, f := shop(t)
	s := filepath.Join(ws, "store", "store.go")
	src := &locatorSource{fakeSource: f, locs: map[DocPos][]Location{
		{Path: s, Pos: Position{Line: 17, Character: 5}}: {{Path: s, Range: rng(12, 5, 10)}},
	}}
	tools := newTestTools(t, ws, src, Options{})
	text, isErr := call(t, tools, ToolTypeDefinition, `{"symbol":"store.New"}`)
	if isErr || !strings.Contains(text, "1 type definition of New (function, store/store.go:18:6):\nstore/store.go:13:6: type Store struct {") {
		t.Errorf("type definition of store.New (isError %v):\n%s", isErr, text)
	}
	if strings.Join(src.methods, " ") != "textDocument/typeDefinition" {
		t.Errorf("the Locator was asked %v", src.methods)
	}
	text, isErr = call(t, tools, ToolTypeDefinition, `{"symbol":"Store.Total"}`)
	if isErr || !strings.HasPrefix(text, "No type definitions found for Store.Total") {
		t.Errorf("no type definition (isError %v):\n%s", isErr, text)
	}

	plain := newTestTools(t, ws, f, Options{})
	text, isErr = call(t, plain, ToolTypeDefinition, `{"symbol":"store.New"}`)
	if !isErr || !strings.Contains(text, "does not offer type definitions") {
		t.Errorf("a Source that is no Locator (isError %v):\n%s", isErr, text)
	}
}
