// Package paired holds the statistics of the benchmarks that measure
// gemkit beside a reference round by round: percentiles of a side, and
// the median of the paired differences with its 95% range.
package paired

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Pct is the p-th percentile of d (nearest rank), 0 when d is empty.
func Pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// Diffs are a's samples less b's, round by round.
func Diffs(a, b []time.Duration) []time.Duration {
	d := make([]time.Duration, min(len(a), len(b)))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}

// MedianCI is d's median and the range of order statistics that holds
// the median of d's distribution with at least 95% confidence (the sign
// test's: ranks n/2 ∓ 0.98√n, from the binomial's normal approximation;
// with few samples the range is wide, as it should be).
func MedianCI(d []time.Duration) string {
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
		return fmt.Sprintf("%s [n=%d: too few for a range]", Ms(med), n)
	}
	return fmt.Sprintf("%s [%s, %s]", Ms(med), Ms(s[k]), Ms(s[n-1-k]))
}

// Ms is d in milliseconds, two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
