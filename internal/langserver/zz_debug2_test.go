package langserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

func TestZZDebug2(t *testing.T) {
	bin := codeinteltest.NodeBin(t, os.Getenv("SRV"))
	path := codeinteltest.PathWith(bin)
	ws := codeinteltest.Fixture(t, os.Getenv("LANGX"))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := New(Options{Workspace: ws, Env: append(os.Environ(), "PATH="+path), LookPath: lookIn(path), Logger: log})
	if err != nil { t.Fatal(err) }
	defer p.Close()
	tl, _ := codeintel.NewTools(p, ws, codeintel.Options{Timeout: 30 * time.Second})
	got, isErr := tl.Call(context.Background(), codeintel.ToolDefinition, json.RawMessage(`{"symbol":"greet"}`))
	t.Log(got, isErr)
}
