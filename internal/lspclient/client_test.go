package lspclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

func startGopls(t *testing.T) (*Client, string) {
	t.Helper()
	gopls := codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Name: "gopls", Command: []string{gopls}, Dir: ws, RequestTimeout: 2 * time.Minute}) // a loaded machine's gopls, not its speed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	return c, ws
}

// The real gopls, headless: the requests lsp/request carries, read as
// internal/lspsource reads them, and
// diagnostics that follow a file changed on disk.
func TestGopls(t *testing.T) {
	c, ws := startGopls(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	main, greet := filepath.Join(ws, "main.go"), filepath.Join(ws, "greet", "greet.go")
	if _, err := c.Open(main, "go"); err != nil {
		t.Fatal(err)
	}
	// ask sends a request as lsp/request carries it, and reads the
	// answer as internal/lspsource does.
	ask := func(method, params string) json.RawMessage {
		t.Helper()
		raw, err := c.Request(ctx, method, json.RawMessage(params))
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return raw
	}
	at := func(path string, line, char int) string {
		return fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}}`, URI(path), line, char)
	}
	use := at(main, 14, 19) // greet.Greet
	defs, err := DecodeLocations(ask("textDocument/definition", use))
	if err != nil || len(defs) != 1 || defs[0].Path != greet || defs[0].Range.Start.Line != 15 {
		t.Fatalf("definition: %+v %v", defs, err)
	}
	refs, err := DecodeLocations(ask("textDocument/references", strings.TrimSuffix(use, "}")+`,"context":{"includeDeclaration":true}}`))
	if err != nil || len(refs) != 2 {
		t.Fatalf("references: %+v %v", refs, err)
	}
	h, err := DecodeHover(ask("textDocument/hover", use))
	if err != nil || !strings.Contains(h.Text, "Greet(name string) string") || !strings.Contains(h.Text, "Greet greets name in English.") {
		t.Fatalf("hover: %+v %v", h, err)
	}
	if _, err := c.Open(greet, "go"); err != nil {
		t.Fatal(err)
	}
	syms, err := DecodeSymbols(ask("textDocument/documentSymbol", fmt.Sprintf(`{"textDocument":{"uri":%q}}`, URI(greet))), greet)
	if err != nil || len(syms) < 4 || syms[0].Name != "Greeter" || syms[0].Location.Path != greet {
		t.Fatalf("document symbols: %+v %v", syms, err)
	}
	ws2, err := DecodeSymbols(ask("workspace/symbol", `{"query":"Greet"}`), "")
	if err != nil || len(ws2) == 0 || ws2[0].Name != "Greet" || ws2[0].Container != "example.com/shop/greet" {
		t.Fatalf("workspace symbols: %+v %v", ws2, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(ask("textDocument/prepareCallHierarchy", at(greet, 15, 5)), &items); err != nil || len(items) != 1 {
		t.Fatalf("call hierarchy: %s %v", items, err)
	}
	item := `{"item":` + string(items[0]) + `}`
	in, err := DecodeIncomingCalls(ask("callHierarchy/incomingCalls", item))
	if err != nil || len(in) != 1 || in[0].Symbol.Name != "main" || len(in[0].Sites) != 1 || in[0].Sites[0].Path != main {
		t.Fatalf("incoming calls: %+v %v", in, err)
	}
	itemURI, _ := CallItemURI(items[0])
	out, err := DecodeOutgoingCalls(ask("callHierarchy/outgoingCalls", item), itemURI)
	if err != nil || len(out) != 1 || out[0].Symbol.Name != "Greet" {
		t.Fatalf("outgoing calls: %+v %v", out, err)
	}
	impls, err := DecodeLocations(ask("textDocument/implementation", at(greet, 4, 6)))
	if err != nil || len(impls) != 1 || impls[0].Range.Start.Line != 9 {
		t.Fatalf("implementations: %+v %v", impls, err)
	}
	if _, err := c.Request(ctx, "textDocument/rename", json.RawMessage(`{}`)); !errors.Is(err, codeintel.ErrUnsupported) {
		t.Errorf("a request lsp/request does not carry: %v", err)
	}
	if d, stale := c.Diagnostics(ctx, main); stale != "" || len(d) != 0 {
		t.Fatalf("diagnostics before: %+v %q", d, stale)
	}

	// An agent writes an error into main.go on disk: Open sends it, and
	// the diagnostics follow.
	text, _ := os.ReadFile(main)
	broken := strings.Replace(string(text), "greet.Greet(", "greet.Gret(", 1)
	os.WriteFile(main, []byte(broken), 0o644)
	if _, err := c.Open(main, "go"); err != nil {
		t.Fatal(err)
	}
	d, stale := c.Diagnostics(ctx, main)
	if stale != "" || len(d) != 1 || !strings.Contains(d[0].Message, "Gret") || d[0].Severity != codeintel.SevError || d[0].Range.Start.Line != 14 {
		t.Fatalf("diagnostics after the error: %+v %q", d, stale)
	}
	os.WriteFile(main, text, 0o644)
	c.Open(main, "go")
	if d, stale := c.Diagnostics(ctx, main); stale != "" || len(d) != 0 {
		t.Fatalf("diagnostics after the fix: %+v %q", d, stale)
	}
}

// A server that cannot start is reported with what it said.
func TestStartFails(t *testing.T) {
	_, err := Start(context.Background(), Config{Name: "bad", Command: []string{"/bin/sh", "-c", "echo no such thing >&2; exit 3"}, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "bad could not start: it exited (exit status 3); its last output: no such thing") {
		t.Fatalf("err = %v", err)
	}
}

// A server that never answers is given up after InitTimeout, and its
// process is ended.
func TestStartSilent(t *testing.T) {
	start := time.Now()
	_, err := Start(context.Background(), Config{Name: "silent", Command: []string{"/bin/sleep", "600"}, Dir: t.TempDir(), InitTimeout: 300 * time.Millisecond})
	if err == nil || err.Error() != "silent did not answer initialize within 300ms" {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}
