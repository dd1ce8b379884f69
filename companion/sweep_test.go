package companion

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// TestSessionSweepInBubble runs the idle-session sweeper on a synctest
// clock: a session with a request in flight outlives any idle time, and
// one left idle goes once SessionIdleTTL has passed since its last
// request, no sooner and no later than the sweeper's next tick (a
// quarter of the TTL). TestExpiredSessionsLeaveNothing checks the same
// over HTTP in real time.
func TestSessionSweepInBubble(t *testing.T) {
	const ttl = 2 * time.Minute
	srv, err := New(Config{Workspace: []string{t.TempDir()}, DiscoveryDir: filepath.Join(t.TempDir(), "ide"), PID: os.Getpid(), SessionIdleTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.guard.Listener().Close() })
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); srv.sess.sweep(ctx) }()
		defer func() { cancel(); <-done }()

		srv.sess.add("busy", initInfo{name: "gemini-cli-mcp-client"}, peerConn{})
		srv.sess.add("idle", initInfo{name: "gemini-cli-mcp-client"}, peerConn{})
		srv.sess.get("busy").begin() // a request that does not end
		start := time.Now()
		idle := srv.sess.get("idle")
		idle.begin()
		// The clock of the bubble: each sleep passes at once.
		time.Sleep(ttl / 2)
		idle.end() // its last request ends at ttl/2
		lastUse := time.Now()

		var gone time.Time
		for time.Since(start) < 10*ttl && gone.IsZero() {
			// In the bubble: one second of the fake clock, at once.
			time.Sleep(time.Second)
			synctest.Wait()
			if srv.sess.get("idle") == nil {
				gone = time.Now()
			}
		}
		if gone.IsZero() {
			t.Fatalf("the idle session was still there %v after its last request", time.Since(lastUse))
		}
		if d := gone.Sub(lastUse); d < ttl || d > ttl+ttl/4+time.Second {
			t.Errorf("the idle session went %v after its last request, want %v to %v", d, ttl, ttl+ttl/4)
		}
		t.Logf("the idle session went %v after its last request", gone.Sub(lastUse))
		if srv.sess.get("busy") == nil {
			t.Errorf("the session with a request in flight expired after %v", time.Since(start))
		}
	})
}
