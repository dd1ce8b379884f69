package companion

import (
	"sync"
	"time"
)

// alarm runs a function once a deadline passes; Reset sets a new deadline
// d from now (whether or not the last one passed) and Stop ends it for
// good. The debounce of context updates uses one: what a client waits for
// beyond the 50 ms is mostly how late the alarm goes off.
type alarm interface {
	Reset(d time.Duration)
	Stop()
}

// runtimeAlarm is an alarm on the Go runtime's timers, which go off up to
// a millisecond late on Linux (the runtime's poller sleeps in whole
// milliseconds); it serves where no finer timer is at hand.
type runtimeAlarm struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func newRuntimeAlarm(f func()) *runtimeAlarm {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return &runtimeAlarm{t: t}
}

func (a *runtimeAlarm) Reset(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.stopped { // a time.Timer would start again
		a.t.Reset(d)
	}
}

func (a *runtimeAlarm) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	a.t.Stop()
}
