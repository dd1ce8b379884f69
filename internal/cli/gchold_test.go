package cli

import (
	"math"
	"slices"
	"strconv"
	"testing"
)

// holdGC holds the collector off with a bound on the memory, puts both
// back as they were, once, and leaves a collector the person tuned, or
// a process that is not gemkit's own, alone.
func TestHoldGC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		hooks    bool
		want     []string // the calls made, in order
		wantHeld bool
	}{
		{name: "held and put back", hooks: true, wantHeld: true,
			want: []string{"limit 134217728", "percent -1", "percent 100", "limit 9223372036854775807"}},
		{name: "GOGC set", hooks: true, env: map[string]string{"GOGC": "50"}},
		{name: "GOMEMLIMIT set", hooks: true, env: map[string]string{"GOMEMLIMIT": "1GiB"}},
		{name: "not gemkit's own process", hooks: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls []string
			percent, limit := 100, int64(math.MaxInt64)
			a := &app{lookupGCEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }}
			if tc.hooks {
				a.setGCPercent = func(p int) int {
					calls = append(calls, "percent "+strconv.Itoa(p))
					old := percent
					percent = p
					return old
				}
				a.setMemoryLimit = func(l int64) int64 {
					calls = append(calls, "limit "+strconv.FormatInt(l, 10))
					old := limit
					limit = l
					return old
				}
			}
			end := a.holdGC()
			if held := percent == -1 && limit == startHeapLimit; held != tc.wantHeld {
				t.Errorf("held: GOGC %d, limit %d; want held %v", percent, limit, tc.wantHeld)
			}
			end()
			end()
			if percent != 100 || limit != math.MaxInt64 {
				t.Errorf("after the end: GOGC %d, limit %d; want 100 and none", percent, limit)
			}
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls %q, want %q", calls, tc.want)
			}
		})
	}
}
