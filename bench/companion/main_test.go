package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs the whole harness with a few iterations against both
// companions, so that the benchmark cannot rot. The figures of a quick run
// mean nothing and are not checked; that the run completes is.
func TestQuickRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := quickConfig(config{node: "node", servers: []string{"reference"}})
	var out bytes.Buffer
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"openDiff → ack p50", "start → discovery file p50", "RSS under load"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{0.5, 5}, {0.99, 10}, {0.1, 1}, {0, 1}, {1, 10},
	}
	for _, tc := range tests {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v", got)
	}
}

func TestGrows(t *testing.T) {
	mb := func(v ...int) []rssPoint {
		var ps []rssPoint
		for _, x := range v {
			ps = append(ps, rssPoint{kb: x * 1024})
		}
		return ps
	}
	tests := []struct {
		name   string
		points []rssPoint
		want   bool
	}{
		{"flat", mb(12, 12, 12, 12), false},
		{"settles", mb(10, 14, 15, 15), false},
		{"climbs", mb(10, 14, 18, 22), true},
		{"noise under a MiB", []rssPoint{{kb: 12000}, {kb: 12000}, {kb: 12100}, {kb: 12900}}, false},
		{"one point", mb(30), false},
	}
	for _, tc := range tests {
		if got := grows(tc.points); got != tc.want {
			t.Errorf("%s: grows = %v, want %v", tc.name, got, tc.want)
		}
	}
}
