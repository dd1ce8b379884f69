package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// benchHome installs exts extensions of tools tools each, by hand (no
// install metadata), and returns the store.
func benchHome(b *testing.B, exts, tools int) *extension.Store {
	home := b.TempDir()
	for i := range exts {
		name := fmt.Sprintf("bench-ext-%03d", i)
		var ts []string
		for j := range tools {
			ts = append(ts, fmt.Sprintf(`{"name": "tool%d", "description": "Tool %d of %s: does one thing with a file.", "executable": "t.sh", "runtime": "shell",
			 "args": [{"name": "file", "type": "string", "description": "The file."}, {"name": "verbose", "type": "boolean"}, {"name": "tags", "type": "array"}]}`, j, j, name))
		}
		writeTree(&testing.T{}, filepath.Join(home, ".gemini", "extensions", name), map[string]string{
			"gemini-extension.json": fmt.Sprintf(`{"name": %q, "version": "1.0.0", "description": "Benchmark extension.", "tools": [%s],
			 "docs": [{"name": "guide", "file": "guide.md"}], "examples": [{"prompt": "do it", "tool_call": "tool1(file=\"a\")"}]}`, name, strings.Join(ts, ",")),
			"t.sh": "echo ok\n", "guide.md": "# Guide\n",
		})
	}
	return extension.OpenStore(home).WithWorkspace(home)
}

// BenchmarkToolsList is a warm tools/list of 50 extensions x 5 tools, in
// process, without a transport.
func BenchmarkToolsList(b *testing.B) {
	st := benchHome(b, 50, 5)
	s, err := New(Config{Source: disclosure.StoreSource(st), Runner: &toolrun.Runner{}})
	if err != nil {
		b.Fatal(err)
	}
	req := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, _ := json.Marshal(s.mcp.HandleMessage(ctx, req))
		if len(out) < 1000 {
			b.Fatalf("%s", out)
		}
	}
}

// BenchmarkNew is what a server does before it can answer: load 50
// extensions x 5 tools, build and cache the tool list.
func BenchmarkNew(b *testing.B) {
	st := benchHome(b, 50, 5)
	for b.Loop() {
		if _, err := New(Config{Source: disclosure.StoreSource(st), Runner: &toolrun.Runner{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is disclosure.Load alone, for comparison with New.
func BenchmarkLoad(b *testing.B) {
	st := benchHome(b, 50, 5)
	for b.Loop() {
		if _, err := disclosure.Load(st); err != nil {
			b.Fatal(err)
		}
	}
}
