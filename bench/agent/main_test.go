package main

import "testing"

// TestQuick runs the benchmark with one extension and two starts, so that
// it keeps working.
func TestQuick(t *testing.T) {
	if err := run(2, 1, 1); err != nil {
		t.Fatal(err)
	}
}
