//go:build linux

package main

import "testing"

// TestQuick runs the benchmark with a few starts and calls, the real
// Claude Code installing the plugin and the switch made, so that it
// cannot rot: every listing and every answer is checked.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and runs the real Claude Code: runs without -short, as in CI")
	}
	if err := run(options{n: 5, starts: 2, seed: 1}); err != nil {
		t.Fatal(err)
	}
}
