package main

import (
	"context"
	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"strings"
	"testing"
)

// TestQuick runs the harness with a few iterations so that it cannot rot:
// both clients must pick the same companion among 200 files and connect.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Gemini CLI client under node: runs without -short, as in CI")
	}
	root, err := benchenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root) // run changes the working directory; t.Chdir restores it
	var out strings.Builder
	cfg := config{root: root, node: "node", files: 200, chooses: 3, connects: 1, out: &out}
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"both chose the companion", "connect → first context", "whole choose step"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
