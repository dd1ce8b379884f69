package companion

import (
	"testing"
	"time"
)

// TestReleaseSettle: pages go back soon after a client came (or a
// change that left the count as it was: a lookup of its process), and
// only much later after one left, when an agent started again at once
// would meet the release in its own start.
func TestReleaseSettle(t *testing.T) {
	for _, tc := range []struct {
		before, now int
		want        time.Duration
	}{
		{0, 1, releaseAfterJoin},
		{1, 2, releaseAfterJoin},
		{1, 1, releaseAfterJoin},
		{1, 0, releaseAfterLeave},
		{2, 1, releaseAfterLeave},
	} {
		if got := releaseSettle(tc.before, tc.now); got != tc.want {
			t.Errorf("releaseSettle(%d, %d) = %v, want %v", tc.before, tc.now, got, tc.want)
		}
	}
	if releaseAfterLeave <= releaseAfterJoin {
		t.Errorf("after a leave pages wait %v, not longer than after a join (%v)", releaseAfterLeave, releaseAfterJoin)
	}
}
