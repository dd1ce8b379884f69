package mcpserver

import (
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
// process, answered by the SDK on its stdio transport (without the cached
// answer of fastlist.go; BenchmarkFastList is that).
func BenchmarkToolsList(b *testing.B) {
	st := benchHome(b, 50, 5)
	s, err := New(Config{Source: disclosure.StoreSource(st), Runner: &toolrun.Runner{}})
	if err != nil {
		b.Fatal(err)
	}
	c := connect(&testing.T{}, s, true)
	b.ReportAllocs()
	for b.Loop() {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		if out := c.answer(); len(out) < 1000 {
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

// BenchmarkFastList is the cached tools/list answer of the same 250 tools.
func BenchmarkFastList(b *testing.B) {
	st := benchHome(b, 50, 5)
	s, err := New(Config{Source: disclosure.StoreSource(st), Runner: &toolrun.Runner{}})
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}` + "\n")
	var out strings.Builder
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if !s.fastList(line, &out) {
			b.Fatal("not answered from the cache")
		}
	}
}
