package lspbroker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/lspsource"
)

// BenchmarkBrokerDefinition: a warm definition by position through the
// tools over a broker's client, beside the same tools over the Pool in
// this process: the difference is the broker's hop (a Unix socket, JSON
// both ways).
func BenchmarkBrokerDefinition(b *testing.B) {
	codeinteltest.Gopls(b)
	ws := codeinteltest.Fixture(b, "go")
	p, err := langserver.New(langserver.Options{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sock := filepath.Join(b.TempDir(), "b.sock")
	ln, err := Listen(sock)
	if err != nil {
		b.Fatal(err)
	}
	go (&Broker{Handler: p.Handle}).Serve(context.Background(), ln)
	c := &Client{Socket: sock}
	defer c.Close()
	args := json.RawMessage(`{"file":"main.go","line":15,"column":20}`)
	ctx := context.Background()
	for name, src := range map[string]codeintel.Source{"pool": own(p), "broker": own(c)} {
		tl, _ := codeintel.NewTools(src, ws, codeintel.Options{})
		for range 5 {
			tl.Call(ctx, codeintel.ToolDefinition, args)
		}
		b.Run(name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				if _, isErr := tl.Call(ctx, codeintel.ToolDefinition, args); isErr {
					b.Fatal("error")
				}
			}
			reportCPU(b, start)
		})
		tl.Close()
	}
}

// own is the Source of gemkit's own servers over conn.
func own(conn lspsource.Conn) codeintel.Source {
	return lspsource.New(nil, &lspsource.Clients{Conn: conn, Confined: true})
}

// BenchmarkBrokerReferences: references to a function used 1,000 times,
// through the tools over the broker, over the Pool, and gopls asked
// directly.
func BenchmarkBrokerReferences(b *testing.B) {
	codeinteltest.Gopls(b)
	ws := codeinteltest.Fixture(b, "go")
	for p := range 20 {
		dir := filepath.Join(ws, "gen", fmt.Sprintf("p%02d", p))
		os.MkdirAll(dir, 0o755)
		for f := range 5 {
			var s strings.Builder
			fmt.Fprintf(&s, "package p%02d\n\nimport \"example.com/shop/greet\"\n\n", p)
			for i := range 10 {
				fmt.Fprintf(&s, "func F%d_%d() string { return greet.Greet(\"v\") }\n\n", f, i)
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(s.String()), 0o644)
		}
	}
	p, err := langserver.New(langserver.Options{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sock := filepath.Join(b.TempDir(), "b.sock")
	ln, err := Listen(sock)
	if err != nil {
		b.Fatal(err)
	}
	go (&Broker{Handler: p.Handle}).Serve(context.Background(), ln)
	c := &Client{Socket: sock}
	defer c.Close()
	args := json.RawMessage(`{"file":"greet/greet.go","line":16,"column":6}`)
	ctx := context.Background()
	at := codeintel.DocPos{Path: filepath.Join(ws, "greet", "greet.go"), Pos: codeintel.Position{Line: 15, Character: 5}}
	for _, name := range []string{"pool", "broker", "source-pool", "source-broker"} {
		var src codeintel.Source = own(p)
		if strings.HasSuffix(name, "broker") {
			src = own(c)
		}
		tl, _ := codeintel.NewTools(src, ws, codeintel.Options{})
		for range 3 {
			tl.Call(ctx, codeintel.ToolReferences, args)
		}
		b.Run(name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				if strings.HasPrefix(name, "source") {
					if _, err := src.References(ctx, at); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, isErr := tl.Call(ctx, codeintel.ToolReferences, args); isErr {
					b.Fatal("error")
				}
			}
			reportCPU(b, start)
		})
		tl.Close()
	}
}
