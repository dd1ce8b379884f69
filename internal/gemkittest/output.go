package gemkittest

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// Output is a buffer a command or a goroutine writes to while the test
// reads it. WaitFor wakes on each write instead of polling with sleeps.
// The zero value is ready to use.
type Output struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced by every write
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// wait returns the output so far and a channel closed by the next write.
func (o *Output) wait() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.changed == nil {
		o.changed = make(chan struct{})
	}
	return o.b.String(), o.changed
}

// WaitFor blocks until ok holds for the output so far and returns that
// output. It fails the test, naming what and showing the output, if that
// has not happened after 10 seconds: a guard against a hang, not a
// measure of speed.
func (o *Output) WaitFor(t testing.TB, what string, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s, changed := o.wait()
		if ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %s; output:\n%s", what, o.String())
		}
	}
}
