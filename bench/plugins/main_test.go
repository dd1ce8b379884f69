//go:build linux

package main

import "testing"

// TestQuick runs the benchmark with a few plugins and runs, the real
// Claude Code installing them and listing them once, so that it cannot
// rot.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and runs the real Claude Code: runs without -short, as in CI")
	}
	if err := run(options{n: 2, count: 4, claudeN: 1}); err != nil {
		t.Fatal(err)
	}
}
