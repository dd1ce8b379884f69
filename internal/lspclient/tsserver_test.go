package lspclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

// The real typescript-language-server: a file's diagnostics are asked
// of tsserver through typescript.tsserverRequest, for the text sent
// just before, with no wait for a publish.
func TestTypeScriptPull(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	ws := codeinteltest.Fixture(t, "ts")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Name: "typescript-language-server", Command: []string{filepath.Join(bin, "typescript-language-server"), "--stdio"}, Dir: ws,
		Env: append(os.Environ(), "PATH="+codeinteltest.PathWith(bin)),
		// tsserver loads the project at the first question, which took
		// over the default 20 s on a loaded machine's CI run: the test
		// asks for the answer, not for its speed.
		RequestTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	main := filepath.Join(ws, "src", "main.ts")
	if _, err := c.Open(main, "typescript"); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Pull(ctx, main); err != nil || len(d) != 0 {
		t.Fatalf("before: %+v %v", d, err)
	}
	text, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(text), "s.total()", "s.totl()", 1)), 0o644)
	if _, err := c.Open(main, "typescript"); err != nil {
		t.Fatal(err)
	}
	d, err := c.Pull(ctx, main)
	if err != nil || len(d) != 1 || d[0].Code != "2551" || d[0].Source != "typescript" || d[0].Severity != codeintel.SevError ||
		d[0].Range.Start != (codeintel.Position{Line: 5, Character: 30}) || !strings.Contains(d[0].Message, "Property 'totl' does not exist") {
		t.Fatalf("after the error: %+v %v", d, err)
	}
}
