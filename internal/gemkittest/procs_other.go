//go:build !linux

package gemkittest

import "time"

// waitExit has no pidfds to wait on here.
func waitExit([]int, time.Duration) bool { return false }
