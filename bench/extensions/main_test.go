package main

import "testing"

// TestQuick runs the benchmark with a few iterations and extensions, the
// real Gemini CLI left out, so that it cannot rot.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and times real runs of it: runs without -short, as in CI")
	}
	if err := run(options{n: 2, count: 3}); err != nil {
		t.Fatal(err)
	}
}
