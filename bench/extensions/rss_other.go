//go:build !linux

package main

import "os"

// peakRSS is not reported here: only Linux gives it in kilobytes.
func peakRSS(*os.ProcessState) int64 { return 0 }
