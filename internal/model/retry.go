package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Retry says how failed model requests are tried again. The defaults are
// Gemini CLI 0.61's (packages/core/src/utils/retry.ts and
// packages/core/src/core/geminiChat.ts); docs/agent.md sets them side by
// side with gemkit's.
type Retry struct {
	// MaxAttempts is how many times one request may be sent while it is
	// refused or cannot connect (retry.ts's DEFAULT_MAX_ATTEMPTS, 10),
	// counted anew after each mid-stream failure; 1 turns retries off.
	MaxAttempts int
	// InitialDelay is the first wait after a refused request (5 s), which
	// doubles after each retry up to MaxDelay (30 s); each wait varies by
	// ±30 %, and a wait the server asked for is lengthened by up to 20 %.
	InitialDelay, MaxDelay time.Duration
	// MaxWait bounds the time spent waiting for one request, all waits
	// together; a wait that would pass it is not started and the error is
	// returned. Gemini CLI has no such bound.
	MaxWait time.Duration
	// MidStreamAttempts is how many times a request may be sent when its
	// answers fail after the server began them (a broken stream, an error
	// event, a reply that did not finish): geminiChat.ts's
	// MID_STREAM_RETRY_OPTIONS, 4, waiting 1 s, 2 s, 4 s.
	MidStreamAttempts int
	MidStreamDelay    time.Duration
	// OnWait is told of each wait before it starts.
	OnWait func(Wait)

	// sleep waits d or until ctx ends (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// Gemini CLI's figures.
const (
	DefaultMaxAttempts       = 10
	DefaultInitialDelay      = 5 * time.Second
	DefaultMaxDelay          = 30 * time.Second
	DefaultMidStreamAttempts = 4
	DefaultMidStreamDelay    = time.Second
	// DefaultMaxWait is gemkit's own bound on the waits of one request:
	// a default run of backoff waits is under four minutes, and a server
	// may ask for up to five minutes once.
	DefaultMaxWait = 10 * time.Minute
)

// Wait is one wait before a retry.
type Wait struct {
	// Attempt is the attempt that failed, of MaxAttempts: counted among
	// the mid-stream failures for one (1 for the first), else among the
	// attempts since the last of those.
	Attempt, MaxAttempts int
	Delay                time.Duration
	// Err is why.
	Err error
	// Discarded reports that the failed attempt had streamed text, which
	// the next attempt replaces.
	Discarded bool
}

// WithRetry returns m with failed requests tried again as r says.
func WithRetry(m Model, r Retry) Model {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.InitialDelay <= 0 {
		r.InitialDelay = DefaultInitialDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultMaxDelay
	}
	// A first wait set above the cap (--retry-delay 1m) is kept for every
	// retry rather than halved to the cap after the first.
	r.MaxDelay = max(r.MaxDelay, r.InitialDelay)
	if r.MaxWait <= 0 {
		r.MaxWait = DefaultMaxWait
	}
	if r.MidStreamAttempts <= 0 {
		r.MidStreamAttempts = DefaultMidStreamAttempts
	}
	if r.MidStreamDelay <= 0 {
		r.MidStreamDelay = DefaultMidStreamDelay
	}
	if r.sleep == nil {
		r.sleep = sleep
	}
	return &retrying{m: m, r: r}
}

type retrying struct {
	m Model
	r Retry
}

func (t *retrying) Describe() string { return t.m.Describe() }

func (t *retrying) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	// Two counts, as geminiChat.ts keeps them: its sendMessageStream
	// tries a request up to MID_STREAM_RETRY_OPTIONS.maxAttempts times
	// when a stream fails after it began, and each of those tries goes
	// through retryWithBackoff, whose attempts and delay start anew.
	delay := t.r.InitialDelay
	tries := 0 // attempts since the last mid-stream failure
	mid := 0   // mid-stream failures so far
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		tries++
		streamed := false
		tee := onText
		if onText != nil {
			tee = func(s string) { streamed = true; onText(s) }
		}
		reply, err := t.m.Generate(ctx, req, tee)
		if err == nil || ctx.Err() != nil {
			return reply, err
		}
		e, again := retryable(err)
		if !again {
			return reply, err
		}
		var d time.Duration
		n, max := tries, t.r.MaxAttempts
		if e.Midstream {
			// geminiChat.ts: 1 s doubling, without jitter, at most
			// MID_STREAM_RETRY_OPTIONS.maxAttempts in all.
			mid++
			n, max = mid, min(max, t.r.MidStreamAttempts)
			d = t.r.MidStreamDelay << (mid - 1)
		} else {
			d, delay = t.backoff(delay, e.RetryDelay)
		}
		if n >= max {
			return reply, withAttempts(e, attempt, "")
		}
		if waited+d > t.r.MaxWait {
			return reply, withAttempts(e, attempt, fmt.Sprintf("The next wait, %v, would pass the %v that one request may wait in all (--retry-max-wait)", d.Round(time.Second), t.r.MaxWait))
		}
		if t.r.OnWait != nil {
			t.r.OnWait(Wait{Attempt: n, MaxAttempts: max, Delay: d, Err: err, Discarded: streamed})
		}
		if err := t.r.sleep(ctx, d); err != nil {
			return Reply{}, err
		}
		waited += d
		if e.Midstream {
			tries, delay = 0, t.r.InitialDelay
		}
	}
}

// backoff returns the wait before the next attempt and the delay after
// it, as retry.ts's retryWithBackoff computes them: a wait the server
// asked for is at least that long plus up to 20 %; otherwise the delay
// ±30 %; the delay then doubles up to MaxDelay.
func (t *retrying) backoff(delay, asked time.Duration) (time.Duration, time.Duration) {
	var d time.Duration
	if asked > 0 {
		delay = max(delay, asked)
		d = delay + time.Duration(float64(delay)*0.2*rand.Float64())
	} else {
		d = max(0, delay+time.Duration(float64(delay)*0.3*(rand.Float64()*2-1)))
	}
	return d, min(t.r.MaxDelay, delay*2)
}

// retryable reports whether err is worth another attempt: 429, 499 and
// 5xx answers unless the quota is final (retry.ts's isRetryableError and
// googleQuotaErrors.ts's classifyGoogleError), failures to connect other
// than a bad certificate (retry.ts's RETRYABLE_NETWORK_CODES: ECONNRESET,
// ECONNREFUSED, ETIMEDOUT, ENOTFOUND…), and failures after the server
// began its answer (geminiChat.ts retries those as "mid-stream" errors).
// An endpoint that said the model cannot call functions is not retried
// whatever its status (llama.cpp says it with a 500): the same request
// would be refused again, and the agent turns to the text protocol.
func retryable(err error) (*Error, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Final || e.Kind == KindNoTools {
		return nil, false
	}
	switch {
	case e.Kind == KindIncomplete:
		return e, true
	case e.Kind == KindNetwork:
		return e, !isCertError(e.Err)
	case e.Status == 429 || e.Status == 499 || e.Status >= 500 && e.Status < 600:
		return e, true
	case e.Midstream && e.Kind == KindServer:
		return e, true
	}
	return nil, false
}

// withAttempts is e said after n attempts, with why the retries stopped
// when it was not their number.
func withAttempts(e *Error, n int, why string) error {
	c := *e
	c.Attempts = n
	switch {
	case why == "":
	case c.Hint == "":
		c.Hint = why
	default:
		c.Hint = why + "; " + strings.ToLower(c.Hint[:1]) + c.Hint[1:]
	}
	return &c
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
