//go:build linux

package main

import (
	"os"
	"testing"
)

// TestMain makes the test binary the byte copier (or the relay in the
// poller) when the benchmark starts it as one, as the command's main does.
func TestMain(m *testing.M) {
	switch os.Getenv(copierEnv) {
	case "1":
		os.Exit(copier(os.Args[1:]))
	case "poll":
		os.Exit(pollCopier(os.Args[1:], false))
	case "pollsid":
		os.Exit(pollCopier(os.Args[1:], true))
	}
	os.Exit(m.Run())
}

// TestQuick runs the benchmark with a few calls and starts so that it
// cannot rot: every call's answer and every listing is checked.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gemkit and starts server-everything sandboxed and bare as real processes: runs without -short, as in CI")
	}
	if err := run(5, 1, 1, "", "", true, true); err != nil {
		t.Fatal(err)
	}
}
