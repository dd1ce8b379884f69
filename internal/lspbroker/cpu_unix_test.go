//go:build unix

package lspbroker

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU reports the CPU time this process spent an operation since
// start (cpuTime's): gemkit's own work, the language server's not, and
// a figure that holds on a machine busy with other work, where the
// wall-clock time per operation does not.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time this process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
