package main

import (
	"os"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox"
)

func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(m.Run())
}

// TestQuick runs the benchmark with a few iterations so that it cannot
// rot: every figure is measured, every answer checked.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gemkit mcp and sandboxed tools as real processes: runs without -short, as in CI")
	}
	if err := run(3, 2, 3, 2); err != nil {
		t.Fatal(err)
	}
}
