package companion

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var alarmKinds = []struct {
	name string
	make func(func()) alarm
}{
	{"default", newAlarm},
	{"runtime", func(f func()) alarm { return newRuntimeAlarm(f) }},
}

// TestAlarm: an alarm goes off once, never before its deadline, a Reset
// moves the deadline, and nothing goes off after Stop.
func TestAlarm(t *testing.T) {
	for _, k := range alarmKinds {
		t.Run(k.name, func(t *testing.T) {
			var (
				fired chan time.Time
				a     alarm
				start time.Time
				moved time.Time
			)
			for try := 1; ; try++ {
				fired = make(chan time.Time, 10)
				a = k.make(func() { fired <- time.Now() })
				start = time.Now()
				a.Reset(30 * time.Millisecond)
				// A sleep: the timerfd alarm runs on the kernel's clock, which
				// synctest cannot fake (TestAlarmInBubble checks the runtime one
				// exactly).
				time.Sleep(10 * time.Millisecond)
				moved = time.Now()
				a.Reset(30 * time.Millisecond) // the debounce restarts
				if moved.Sub(start) < 25*time.Millisecond || try == 20 {
					break
				}
				// A loaded machine let the sleep run up to the first
				// deadline, which may then go off before the moved one,
				// rightly: that is not the case tested; again.
				a.Stop()
			}
			select {
			case at := <-fired:
				if at.Sub(moved) < 30*time.Millisecond {
					t.Fatalf("went off %v after the last Reset, before its 30ms", at.Sub(moved))
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("never went off (started %v ago)", time.Since(start))
			}
			select {
			case <-fired:
				t.Fatal("went off twice for one deadline")
			case <-time.After(60 * time.Millisecond):
			}

			// Again after it went off.
			a.Reset(time.Millisecond)
			select {
			case <-fired:
			case <-time.After(30 * time.Second):
				t.Fatal("a second deadline never went off")
			}

			a.Reset(20 * time.Millisecond)
			a.Stop()
			a.Reset(time.Millisecond) // harmless after Stop
			select {
			case <-fired:
				t.Fatal("went off after Stop")
			case <-time.After(60 * time.Millisecond):
			}
		})
	}
}

// BenchmarkAlarmLateness measures how late a 5 ms alarm goes off, the
// figure that adds to the 50 ms debounce of context updates: see the
// late-µs metric (p50 and p90 over the run).
func BenchmarkAlarmLateness(b *testing.B) {
	for _, k := range alarmKinds {
		b.Run(k.name, func(b *testing.B) {
			const d = 5 * time.Millisecond
			var deadline atomic.Int64
			fired := make(chan time.Duration, 1)
			a := k.make(func() { fired <- time.Duration(time.Now().UnixNano() - deadline.Load()) })
			defer a.Stop()
			late := make([]time.Duration, 0, b.N)
			for b.Loop() {
				deadline.Store(time.Now().Add(d).UnixNano())
				a.Reset(d)
				late = append(late, <-fired)
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2])/1e3, "p50-late-µs")
			b.ReportMetric(float64(late[len(late)*9/10])/1e3, "p90-late-µs")
		})
	}
}

// TestAlarmInBubble checks the runtime alarm, which runs on Go's timers,
// to the nanosecond in a synctest bubble: it goes off exactly its delay
// after the last Reset, once, and never after Stop.
func TestAlarmInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var fired []time.Time
		a := newRuntimeAlarm(func() { mu.Lock(); fired = append(fired, time.Now()); mu.Unlock() })
		a.Reset(30 * time.Millisecond)
		// Sleeps in the bubble take no real time: its clock jumps ahead.
		time.Sleep(10 * time.Millisecond)
		moved := time.Now()
		a.Reset(30 * time.Millisecond) // the debounce restarts
		// In the bubble: far past the deadline, at once.
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(fired) != 1 || fired[0].Sub(moved) != 30*time.Millisecond {
			t.Fatalf("went off at %v after the last Reset, want once at 30ms", offsets(fired, moved))
		}

		a.Reset(20 * time.Millisecond)
		a.Stop()
		a.Reset(time.Millisecond) // harmless after Stop
		mu.Unlock()
		// In the bubble: far past both deadlines, at once.
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if len(fired) != 1 {
			t.Fatalf("went off after Stop: %v", offsets(fired, moved))
		}
	})
}

func offsets(ts []time.Time, from time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(from))
	}
	return ds
}
