package companion

import (
	"sync"
	"time"
)

// The settle times of ReleaseAfterClientsChange: after a connect, and
// after a disconnect.
const (
	releaseAfterJoin  = 2 * time.Second
	releaseAfterLeave = 30 * time.Second
)

// releaseSettle is how long a change of clients from before to now
// clients settles before pages go back: longer when one left.
func releaseSettle(before, now int) time.Duration {
	if now < before {
		return releaseAfterLeave
	}
	return releaseAfterJoin
}

// ReleaseAfterClientsChange makes cfg call release (which gives the
// executable's pages back) once a change of clients has settled: a
// client's connect runs code (initialize,
// tools/list, the first answers) that idle serving never runs again, so
// pages go back releaseAfterJoin after a connect. After a disconnect they
// wait releaseAfterLeave: an agent quit and started again at once (a
// restart, a second session) would otherwise meet the release (a forced
// collection, the pages' madvise, their faults at the next connect) in
// its own start, on the same two cores (bench/editors, back-to-back
// starts at load 10-16: the editor side's CPU during a start 7.3 ms
// against 2.9 for claudecode.nvim and 3.7 for the same plugin between two
// others' starts), and its connect releases the pages soon enough. The
// function it returns stops the timer.
func ReleaseAfterClientsChange(cfg *Config, release func()) (stop func()) {
	settle := time.AfterFunc(time.Hour, release)
	settle.Stop()
	var (
		mu      sync.Mutex
		srv     *Server
		clients int
	)
	ready := cfg.OnReady
	cfg.OnReady = func(s *Server) {
		mu.Lock()
		srv = s
		mu.Unlock()
		if ready != nil {
			ready(s)
		}
	}
	changed := cfg.OnClientsChange
	cfg.OnClientsChange = func() {
		if changed != nil {
			changed()
		}
		wait := releaseAfterJoin
		mu.Lock()
		if srv != nil {
			n := srv.ClientCount()
			wait = releaseSettle(clients, n)
			clients = n
		}
		mu.Unlock()
		settle.Reset(wait)
	}
	return func() { settle.Stop() }
}
