package model

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// flaky fails its first fails calls with err and answers "ok" after,
// noting the time of each call.
type flaky struct {
	fails int
	err   error
	at    []time.Time
}

func (f *flaky) Describe() string { return "flaky" }

func (f *flaky) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	f.at = append(f.at, time.Now())
	if len(f.at) <= f.fails {
		return Reply{}, f.err
	}
	return Reply{Text: "ok"}, nil
}

// TestRetryWaitsInTime runs the retries with their real timer in a
// synctest bubble, whose clock moves only when every goroutine waits:
// each attempt comes exactly the wait OnWait announced after the one
// before, and a cancel ends a 60 s wait when it comes. TestRetries checks
// the lengths of the waits against Gemini CLI's retry.ts; this checks
// that they are waited.
func TestRetryWaitsInTime(t *testing.T) {
	overloaded := &Error{Kind: KindServer, Status: 503, Msg: "The model is overloaded."}
	t.Run("waits between attempts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &flaky{fails: 3, err: overloaded}
			var waits []time.Duration
			start := time.Now()
			r, err := WithRetry(f, Retry{OnWait: func(w Wait) { waits = append(waits, w.Delay) }}).Generate(context.Background(), Request{}, nil)
			if err != nil || r.Text != "ok" || len(f.at) != 4 || len(waits) != 3 {
				t.Fatalf("reply %+v, error %v after %d calls and waits %v", r, err, len(f.at), waits)
			}
			var sum time.Duration
			for i, w := range waits {
				if got := f.at[i+1].Sub(f.at[i]); got != w {
					t.Errorf("attempt %d came %v after the one before, want the announced %v", i+2, got, w)
				}
				sum += w
			}
			if got := time.Since(start); got != sum {
				t.Errorf("the request took %v, want the sum of its waits %v", got, sum)
			}
		})
	})
	t.Run("cancel ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			quota := &Error{Kind: KindServer, Status: 429, RetryDelay: time.Minute, Msg: "Resource exhausted."}
			f := &flaky{fails: 1, err: quota}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(10*time.Second, cancel)
			start := time.Now()
			_, err := WithRetry(f, Retry{}).Generate(ctx, Request{}, nil)
			if !errors.Is(err, context.Canceled) || len(f.at) != 1 {
				t.Fatalf("error %v after %d calls, want context.Canceled after 1", err, len(f.at))
			}
			if got := time.Since(start); got != 10*time.Second {
				t.Errorf("the wait ended after %v, want at the cancel, 10s", got)
			}
		})
	})
}
