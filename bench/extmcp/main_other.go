//go:build !linux

package main

import (
	"fmt"
	"os"
)

// gemkit runs extensions' MCP servers only in its sandbox, which is
// Linux's.
func main() {
	fmt.Fprintln(os.Stderr, "bench/extmcp runs on Linux only (gemkit's sandbox is Linux's)")
	os.Exit(1)
}
