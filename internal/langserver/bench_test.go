package langserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// BenchmarkDefinition: a warm definition by position through the tools
// over a Pool in this process, beside gopls asked directly by a bare
// client: the difference is gemkit's own work (resolving the position,
// keeping the documents in step, wording the answer).
func BenchmarkDefinition(b *testing.B) {
	codeinteltest.Gopls(b)
	ws := codeinteltest.Fixture(b, "go")
	p, err := New(Options{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tl, _ := codeintel.NewTools(source(p), ws, codeintel.Options{})
	defer tl.Close()
	args := json.RawMessage(`{"file":"main.go","line":15,"column":20}`)
	ctx := context.Background()
	for range 5 {
		tl.Call(ctx, codeintel.ToolDefinition, args)
	}
	b.Run("tools", func(b *testing.B) {
		for b.Loop() {
			if _, isErr := tl.Call(ctx, codeintel.ToolDefinition, args); isErr {
				b.Fatal("error")
			}
		}
	})
	c, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{codeinteltest.Gopls(b)}, Dir: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Shutdown(ctx)
	main := filepath.Join(ws, "main.go")
	c.Open(main, "go")
	at := codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}}
	for range 5 {
		direct(ctx, c, "textDocument/definition", at)
	}
	b.Run("gopls", func(b *testing.B) {
		for b.Loop() {
			if _, err := direct(ctx, c, "textDocument/definition", at); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkColdDefinition: gopls started, initialized and asked its
// first definition, the way a Pool starts it (in its sandbox, with its
// profile) and as a plain child process with the person's environment,
// alternated so both see the same load. Each way starts once unmeasured
// first, so both find their caches filled (the sandboxed gopls's are
// its own). Reported: the median of each, in ms.
func BenchmarkColdDefinition(b *testing.B) {
	gopls := codeinteltest.Gopls(b)
	ws := codeinteltest.Fixture(b, "go")
	p, err := New(Options{Workspace: ws, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	main := filepath.Join(ws, "main.go")
	at := codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}}
	ctx := context.Background()
	once := func(start lspclient.Starter, noPID bool, linger time.Duration) time.Duration {
		t0 := time.Now()
		c, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{gopls}, Dir: ws, Start: start, NoProcessID: noPID})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Shutdown(ctx)
		if _, err := c.Open(main, "go"); err != nil {
			b.Fatal(err)
		}
		if l, err := direct(ctx, c, "textDocument/definition", at); err != nil || len(l) != 1 {
			b.Fatalf("definition: %v %v", l, err)
		}
		d := time.Since(t0)
		// A sleep: a warm-up start lives long enough for gopls to write its
		// file cache in the background, which it tells no one.
		time.Sleep(linger)
		return d
	}
	boxed := p.sandboxStarter(Builtin()[0], gopls)
	// gopls writes its file cache (the standard library's export data
	// and indexes) in the background: the first start lives long
	// enough to finish.
	once(lspclient.ExecStart, false, 5*time.Second)
	once(boxed, true, 5*time.Second)
	var plain, sandboxed []time.Duration
	for b.Loop() {
		plain = append(plain, once(lspclient.ExecStart, false, 0))
		sandboxed = append(sandboxed, once(boxed, true, 0))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(plain), "ms-plain")
	b.ReportMetric(med(sandboxed), "ms-sandboxed")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkHoverImplementations: warm hover and implementations through
// the tools, by name in a file and by position, beside gopls asked
// directly.
func BenchmarkHoverImplementations(b *testing.B) {
	codeinteltest.Gopls(b)
	ws := codeinteltest.Fixture(b, "go")
	p, err := New(Options{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tl, _ := codeintel.NewTools(source(p), ws, codeintel.Options{})
	defer tl.Close()
	ctx := context.Background()
	calls := []struct{ name, tool, args string }{
		{"hover/name", codeintel.ToolHover, `{"symbol":"Greet","file":"greet/greet.go"}`},
		{"hover/position", codeintel.ToolHover, `{"file":"greet/greet.go","line":16,"column":6}`},
		{"implementations/name", codeintel.ToolImplementations, `{"symbol":"Greeter","file":"greet/greet.go"}`},
		{"implementations/position", codeintel.ToolImplementations, `{"file":"greet/greet.go","line":6,"column":6}`},
	}
	for _, c := range calls {
		for range 5 {
			tl.Call(ctx, c.tool, json.RawMessage(c.args))
		}
		b.Run("tools/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, isErr := tl.Call(ctx, c.tool, json.RawMessage(c.args)); isErr {
					b.Fatal("error")
				}
			}
		})
	}
	c, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{codeinteltest.Gopls(b)}, Dir: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Shutdown(ctx)
	g := filepath.Join(ws, "greet", "greet.go")
	c.Open(g, "go")
	fn := codeintel.DocPos{Path: g, Pos: codeintel.Position{Line: 15, Character: 5}}
	iface := codeintel.DocPos{Path: g, Pos: codeintel.Position{Line: 5, Character: 5}}
	for range 5 {
		direct(ctx, c, "textDocument/hover", fn)
		direct(ctx, c, "textDocument/implementation", iface)
	}
	b.Run("gopls/hover", func(b *testing.B) {
		for b.Loop() {
			if _, err := direct(ctx, c, "textDocument/hover", fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gopls/implementations", func(b *testing.B) {
		for b.Loop() {
			if _, err := direct(ctx, c, "textDocument/implementation", iface); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// direct asks gopls a question at a position as lsp/request carries it;
// the answer of a location request is decoded, as lspsource does.
func direct(ctx context.Context, c *lspclient.Client, method string, at codeintel.DocPos) ([]codeintel.Location, error) {
	params := fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}}`, lspclient.URI(at.Path), at.Pos.Line, at.Pos.Character)
	raw, err := c.Request(ctx, method, json.RawMessage(params))
	if err != nil || method == "textDocument/hover" {
		return nil, err
	}
	return lspclient.DecodeLocations(raw)
}
