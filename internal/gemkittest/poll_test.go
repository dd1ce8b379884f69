package gemkittest

import (
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Second, time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition met on the third ask: Poll asked %d times", n)
	}
	start := time.Now()
	if Poll(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("a condition never met was reported met")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Poll gave up after %v, before its 20ms", d)
	}
}
