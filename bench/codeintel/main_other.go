//go:build !linux

package main

import (
	"fmt"
	"os"
)

// The benchmark reads the processes' memory and tree from /proc.
func main() {
	fmt.Fprintln(os.Stderr, "bench/codeintel runs on Linux only (it reads /proc)")
	os.Exit(1)
}
