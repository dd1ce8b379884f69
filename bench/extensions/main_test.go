package main

import "testing"

// TestQuick runs the benchmark with a few iterations and extensions, the
// real Gemini CLI left out, so that it cannot rot.
func TestQuick(t *testing.T) {
	if err := run(options{n: 2, count: 3}); err != nil {
		t.Fatal(err)
	}
}
