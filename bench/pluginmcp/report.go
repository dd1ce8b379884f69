//go:build linux

package main

import (
	"fmt"
	"math"
	"slices"
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
			fmt.Printf(line, "  "+s.name, ms(pct(m.d[i], 50)), ms(pct(m.d[i], 90)))
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
		fmt.Printf("  %-24s %s\n", m.what, medianCI(diffs(m.d[0], m.d[1])))
	}
}

// pct is the p-th percentile of d (nearest rank).
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// diffs are a's samples less b's, round by round.
func diffs(a, b []time.Duration) []time.Duration {
	d := make([]time.Duration, min(len(a), len(b)))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}

// medianCI is d's median and the range of order statistics that holds
// the median of d's distribution with at least 95% confidence (the sign
// test's: ranks n/2 ∓ 0.98√n).
func medianCI(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	k := int(math.Floor(float64(n)/2 - 0.98*math.Sqrt(float64(n))))
	if k < 0 {
		return fmt.Sprintf("%s [n=%d: too few for a range]", ms(med), n)
	}
	return fmt.Sprintf("%s [%s, %s]", ms(med), ms(s[k]), ms(s[n-1-k]))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
