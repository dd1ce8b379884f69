package main

import "testing"

// TestQuick runs the benchmark with one extension and two starts, so that
// it keeps working.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and runs agents over real processes for seconds: runs without -short, as in CI")
	}
	if err := run(2, 1, 1); err != nil {
		t.Fatal(err)
	}
}
