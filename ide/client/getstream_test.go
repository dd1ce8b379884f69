package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide/conformance/testcompanion"
)

// TestOutcomesOnTheGETStream uses a companion that is not built on an MCP
// SDK (plain JSON answers to POST, notifications only on the GET stream)
// and answers each diff itself: accepted, rejected, or with the legacy
// ide/diffClosed, which counts as rejected.
func TestOutcomesOnTheGETStream(t *testing.T) {
	tests := []struct {
		answer   string
		accepted bool
		content  string
	}{
		{"accept", true, "proposal (edited)"},
		{"reject", false, ""},
		{"closed", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			root := t.TempDir()
			dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			tc, err := testcompanion.Start(testcompanion.Flaws{Answer: tt.answer}, dir, ws)
			if err != nil {
				t.Fatal(err)
			}
			defer tc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := Connect(ctx, Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if _, err := c.WaitContext(ctx); err != nil {
				t.Fatal(err)
			}
			o, err := c.OpenDiff(ctx, filepath.Join(ws, "f.txt"), "proposal")
			if err != nil || o.Accepted != tt.accepted || o.Content != tt.content {
				t.Errorf("outcome %+v, %v", o, err)
			}
			// The companion going away is noticed from the stream.
			tc.Close()
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the end of the companion was not noticed")
			}
		})
	}
}
