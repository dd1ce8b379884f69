package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestLargeExtensionServed: an extension as large as the published
// packages gemkit must take (mongodb's holds 22,681 files, 411 MB, which
// gemkit refused with "more than 20000 files or 512 MiB"): 25,000 files
// and 500 MB (npm's layout, and a data file of 480 MB) links with
// consent, switches and starts, and its server answers through gemkit
// mcp.
func TestLargeExtensionServed(t *testing.T) {
	gemkittest.SkipShort(t, "writes an extension of 25,000 files and 500 MB and starts its server")
	gemkittest.Interop(t) // node, for the server
	fixture := serverFixture(t)
	f := newFixture(t)
	src := filepath.Join(f.root, "src", "large")
	const files = 25000
	body := []byte(strings.Repeat("// a module of a dependency\n", 8))
	for i := range files - 3 {
		p := filepath.Join(src, "node_modules", fmt.Sprintf("pkg%04d", i/20), "lib", fmt.Sprintf("f%02d.js", i%20))
		if i%20 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(src, "data", "model.bin")
	os.MkdirAll(filepath.Dir(data), 0o755)
	df, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := df.Truncate(480 << 20); err != nil {
		t.Fatal(err)
	}
	df.Close()
	f.link(t, "large", `{"name": "large", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/server.mjs"]}}}`, map[string]string{"server.mjs": fixture})
	if out, err := f.gemkit("extensions", "sandbox", "large"); err != nil || !strings.Contains(out, "Switched") {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	defer run.c.Close()
	res, err := run.c.CallTool(ctx, "large_ok", nil)
	if err != nil || res.IsError || res.Text("") != "ok" {
		t.Fatalf("large_ok: %+v %v\n%s", res, err, run.stderr.String())
	}
}
