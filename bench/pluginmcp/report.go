//go:build linux

package main

import (
	"fmt"
	"github.com/gemkit/gemkit/bench/internal/paired"
	"time"
)

const line = "%-38s %14s %14s\n"

// print writes each measure's p50 and p90 on each side (side 0 the
// switched one, side 1 bare), then the switched side's cost paired by
// round.
func (r *results) print(sides []side) {
	fmt.Println("from the spawn: initialize answered; then the first tools/list answered; then the first tools/call answered")
	for _, m := range []struct {
		what string
		d    [][]time.Duration
	}{
		{"initialize answered", r.initialized},
		{"first tools/list answered", r.listed},
		{"first tools/call answered", r.called},
		{"a start's CPU (wait4)", r.startCPU},
		{"warm tools/call", r.warm},
	} {
		fmt.Printf(line, m.what, "p50", "p90")
		for i, s := range sides {
			fmt.Printf(line, "  "+s.name, paired.Ms(paired.Pct(m.d[i], 50)), paired.Ms(paired.Pct(m.d[i], 90)))
		}
	}
	for i, s := range sides {
		fmt.Printf("CPU a warm call, the process tree %s: %.1f µs\n", s.name, float64(r.cpuPerCall[i])/float64(time.Microsecond))
	}
	fmt.Println("switched over bare, paired by round: the median of the rounds' differences [95% range of that median]")
	for _, m := range []struct {
		what string
		d    [][]time.Duration
	}{
		{"first tools/list", r.listed}, {"first tools/call", r.called}, {"a start's CPU", r.startCPU}, {"warm tools/call", r.warm},
	} {
		fmt.Printf("  %-24s %s\n", m.what, paired.MedianCI(paired.Diffs(m.d[0], m.d[1])))
	}
}
