package lspbroker

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/langserver"
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
	go (&Broker{Source: p}).Serve(context.Background(), ln)
	c := &Client{Socket: sock}
	defer c.Close()
	args := json.RawMessage(`{"file":"main.go","line":15,"column":20}`)
	ctx := context.Background()
	for name, src := range map[string]codeintel.Source{"pool": p, "broker": c} {
		tl, _ := codeintel.NewTools(src, ws, codeintel.Options{})
		for range 5 {
			tl.Call(ctx, codeintel.ToolDefinition, args)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, isErr := tl.Call(ctx, codeintel.ToolDefinition, args); isErr {
					b.Fatal("error")
				}
			}
		})
		tl.Close()
	}
}
