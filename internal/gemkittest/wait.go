package gemkittest

import (
	"runtime"
	"testing"
	"time"
)

// WaitGoroutines waits until at most max goroutines run, as they wind down
// after a test's work, and fails the test with every goroutine's stack if
// more are still there after 5 seconds. The count has no event to wait
// on, so this one wait polls.
func WaitGoroutines(t testing.TB, max int, what string) {
	t.Helper()
	if !Poll(5*time.Second, 10*time.Millisecond, func() bool { return runtime.NumGoroutine() <= max }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left running %s (at most %d expected):\n%s", runtime.NumGoroutine(), what, max, buf[:runtime.Stack(buf, true)])
	}
}
