//go:build !linux

package main

import (
	"fmt"
	"os"
)

// The reference runs offline in a network namespace of its own
// (unshare), which is Linux's.
func main() {
	fmt.Fprintln(os.Stderr, "bench/plugins runs on Linux only (the reference runs offline under unshare)")
	os.Exit(1)
}
