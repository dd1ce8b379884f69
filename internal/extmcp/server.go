package extmcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
)

// server is one spec's server: not running, starting, or running. It is
// composed of parts that each own one concern's state, so that what a
// change touches stands in one file:
//
//   - proc (process.go): the run, its deaths, its calls and idling, and
//     the subscriptions a new run takes again;
//   - cache (listcache.go): what it offers as last listed, and the kept
//     catalog answered from before it starts (kept.go);
//   - reports (runreports.go): what its current run was refused and
//     told, under a lock of its own, since the sandbox reports while a
//     start holds mu;
//   - the data folder's bound (datawatch.go), which it holds while it
//     runs.
//
// mu guards proc and cache together: a listing holds it across the
// start it may need, so that one start serves the callers that wait.
type server struct {
	m    *Manager
	spec Spec
	// stderr keeps the end of what its runs printed on stderr, for the
	// words of a failure.
	stderr *tail
	// life ends (end) when the server is stopped for good: what works
	// for no caller (the start behind a kept catalog's answer) stops
	// then, before stop waits for s.mu, which it holds.
	life context.Context
	end  context.CancelFunc

	// listing keeps listings one at a time; it is taken before mu, and
	// a listing lets mu go across its round trips (listNow).
	listing sync.Mutex
	mu      sync.Mutex
	proc    process
	cache   listCache
	// queued counts the requests that wait for mu or have it and have
	// not yet written to the server, early those begun while the server
	// was not running that have not been answered yet (request), and
	// passed, whose lock is mu, hears each change: a listing lets the
	// requests that waited for its start go to the server first, and a
	// listing no client waits for lets them be answered first (listNow).
	queued atomic.Int32
	early  atomic.Int32
	passed sync.Cond

	reports runReports
	// keepOnce: gemkit's copy of the extension as agreed to was asked
	// for (Spec.Keep), once a start let through by the check of its
	// folder ran; not again in this process.
	keepOnce atomic.Bool
	// declared is what it declared in its initialize answer the last
	// time it started (nil: not started yet); read without s.mu, which a
	// start holds.
	declared atomic.Pointer[mcpclient.Capabilities]
	// asking are its requests under way that a question may come in
	// (elicit.go).
	asking asking
}

// newServer is m's server of sp, not started.
func newServer(m *Manager, sp Spec) *server {
	life, end := context.WithCancel(context.Background())
	s := &server{m: m, spec: sp, stderr: &tail{}, life: life, end: end}
	s.passed.L = &s.mu
	return s
}

// MaxStart bounds a server's start and its first listing, whatever its
// timeout: they hold up a client's first tools/list, which the clients
// bound themselves.
const MaxStart = 20 * time.Second

// startTimeout bounds a start and a listing.
func (s *server) startTimeout() time.Duration { return min(s.timeout(), MaxStart) }

func (s *server) timeout() time.Duration {
	if s.spec.Timeout > 0 {
		return s.spec.Timeout
	}
	return s.m.cfg.Timeout
}

// who names the server in words.
func (s *server) who() string {
	if s.spec.Agent != "" {
		return fmt.Sprintf("extension %s's agent %s's MCP server %s", Printable(s.spec.Extension), Printable(s.spec.Agent), Printable(s.spec.Server))
	}
	return fmt.Sprintf("extension %s's MCP server %s", Printable(s.spec.Extension), Printable(s.spec.Server))
}

// ended reports whether the server was stopped for good (its life
// ended: Close, or Sync without it).
func (s *server) ended() bool { return s.life != nil && s.life.Err() != nil }

// failure wraps what went wrong with the server's name and what it
// printed on stderr: the line that says why first, then the end.
func (s *server) failure(what string) error {
	msg := s.who() + " " + what
	if s.spec.Remote() {
		return &runFailure{msg, msg}
	}
	brief := msg
	if c := s.stderr.Cause(); c != "" {
		brief += "; it said: " + c
	}
	if w := s.stderr.stderrWords("the end of what it printed on stderr"); w != "" {
		msg += w
	} else {
		msg += " (it printed nothing on stderr)"
		brief = msg
	}
	return &runFailure{msg, brief}
}

// runFailure is a failure of a server's run (failure): kept, when a
// start or a listing fails so, for list, describe and doctor
// (lastlisting.go), in brief: on one line, its cause but not the end of
// its stderr.
type runFailure struct{ msg, brief string }

func (e *runFailure) Error() string { return e.msg }

func oneLine(s string) string {
	return Printable(strings.Join(strings.Fields(s), " "))
}
