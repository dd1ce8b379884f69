package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestReferenceCompanionPasses runs every check, the interactive ones
// included, against the reference companion built like the official one
// (Node, express, the TypeScript MCP SDK): the checks hold for a
// companion we did not write in Go, not only for ours.
func TestReferenceCompanionPasses(t *testing.T) {
	root := gemkittest.RepoRoot(t)
	node, _ := gemkittest.Interop(t, "@modelcontextprotocol/sdk")
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ed, err := scripted.Start(ctx, scripted.Options{Command: []string{node, filepath.Join(root, "bench", "reference", "companion.mjs")}, Workspace: []string{ws}, TMPDIR: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Stop()
	go func() {
		for d := range ed.Opened {
			switch {
			case strings.Contains(d.NewContent, "accept me"):
				ed.Accept(d.FilePath, d.NewContent+"edited\n")
			case strings.Contains(d.NewContent, "reject me"):
				ed.Reject(d.FilePath)
			}
		}
	}()
	r, err := Run(ctx, Options{Interactive: true, Client: client.Options{Dir: filepath.Join(tmp, "gemini", "ide"), Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if res.Outcome != Pass {
			t.Errorf("%s: %s %s", res.ID, res.Outcome, res.Detail)
		}
	}
}
