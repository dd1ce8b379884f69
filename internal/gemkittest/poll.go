package gemkittest

import "time"

// Poll calls cond every interval until it holds, and reports whether it
// held within the time given (cond is asked once more at the end). It is
// the one way gemkit's tests wait for a state that has no event to wait
// on: another process's, the kernel's, a real peer's, a server's inner
// state. Each caller says in its own words what failed to happen.
func Poll(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		// A poll: the state cond reads has no event to wait on.
		time.Sleep(every)
	}
	return true
}
