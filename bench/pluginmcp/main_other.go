//go:build !linux

package main

import (
	"fmt"
	"os"
)

// Claude Code runs offline in a network namespace of its own (unshare),
// and gemkit's sandbox is Linux's.
func main() {
	fmt.Fprintln(os.Stderr, "bench/pluginmcp runs on Linux only")
	os.Exit(1)
}
