//go:build linux

package main

import (
	"os"
	"syscall"
)

// peakRSS is the peak resident memory of an exited process, in KB.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
