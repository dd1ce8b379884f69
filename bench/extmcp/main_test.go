//go:build linux

package main

import "testing"

// TestQuick runs the benchmark with a few calls and starts so that it
// cannot rot: every call's answer and every listing is checked.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and starts server-everything sandboxed and bare as real processes: runs without -short, as in CI")
	}
	if err := run(5, 2, "", ""); err != nil {
		t.Fatal(err)
	}
}
