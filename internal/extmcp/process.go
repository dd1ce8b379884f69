package extmcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// maxDeaths is how many times a server may die before it is not started
// again: once it died, it is started again once.
const maxDeaths = 2

// process is a server's run and what outlives one: how often it died
// and why, the calls under way and its last use (which keep it from
// idling), and the subscriptions a new run takes again. The server's mu
// guards it.
type process struct {
	run  *running
	last *running // the one stop stopped
	// subs are the URIs subscribed to (resources/subscribe): sent again
	// when the server starts again, and they keep it from idling.
	subs    map[string]bool
	deaths  int
	lastErr string // why it died the last time
	// inflight are the calls under way and lastUse (Unix nanoseconds)
	// when one last ended: a forwarded call (forward.go) counts them
	// without the server's mu, which a start holds across the
	// server's start.
	inflight atomic.Int64
	lastUse  atomic.Int64
	idle     *time.Timer
	gone     bool // stopped for good (Sync, Close)
	// up says run is not nil, read without the server's mu (request).
	up atomic.Bool
}

// running is a started server: a process in the sandbox, or a
// connection to a remote one.
type running struct {
	// kill ends it (the process, or the connection), wait waits for
	// that and says how it ended.
	kill func()
	wait func() error
	// denied is what the sandbox refused it so far (nil for a remote
	// server, which has no sandbox).
	denied func() []netproxy.Denial
	client *mcpclient.Client
	tmp    string
	data   string // its data folder
	// readOnly are every extension's folders, read-only to it.
	readOnly []string
	exited   chan struct{} // closed when it exited
	waitErr  error         // how it exited, once exited is closed
	done     chan struct{} // closed when watch recorded its exit
	killed   atomic.Bool
	// broke, once set, is how the server broke its MCP connection while
	// it ran on: gemkit then stopped it, which counts as a death.
	broke atomic.Pointer[string]
	// progress routes the server's progress notifications to the calls
	// that asked, by the token gemkit gave the call.
	progress sync.Map // string -> Progress
	tokens   atomic.Int64
	caps     mcpclient.Capabilities
	// lacks are the optional methods it was found to lack (catalog.go).
	lacks lacks
}

// exitedSoon reports whether r exits within a moment: a server whose
// output ended is about to.
func (r *running) exitedSoon() bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-r.exited:
		return true
	case <-t.C:
		return false
	}
}

// drop forgets r as the current run, if it still is.
func (p *process) drop(r *running) {
	if p.run == r {
		p.run = nil
		p.up.Store(false)
	}
}

// kill stops the current run, if any.
func (p *process) kill() {
	if r := p.run; r != nil {
		r.killed.Store(true)
		if r.client != nil {
			// Its requests end with it: the SDK's Close waits for them.
			_ = r.client.Abort()
		}
		r.kill()
		p.run = nil
		p.up.Store(false)
		go func() { <-r.done }()
	}
}

// retire stops the process for good, keeping the run it stopped for
// waitGone.
func (p *process) retire() {
	p.gone = true
	if p.idle != nil {
		p.idle.Stop()
	}
	p.last = p.run
	p.kill()
}

// touch records a use and (re)arms the idle timer, which calls check
// after idle.
func (p *process) touch(idle time.Duration, check func()) {
	p.lastUse.Store(time.Now().UnixNano())
	if p.idle == nil {
		p.idle = time.AfterFunc(idle, check)
		return
	}
	p.idle.Reset(idle)
}

// idleFor reports whether a run went unused for idle, with no call
// under way and no subscription; when it did not, the timer is armed
// again, for what is left of idle since the last use (a forwarded call
// records its use without arming it).
func (p *process) idleFor(idle time.Duration) bool {
	if p.inflight.Load() > 0 || len(p.subs) > 0 {
		p.idle.Reset(idle)
		return false
	}
	if since := time.Since(time.Unix(0, p.lastUse.Load())); since < idle {
		p.idle.Reset(idle - since)
		return false
	}
	return true
}

// subscribe and unsubscribe record the URIs a new run subscribes to
// again.
func (p *process) subscribe(uri string) {
	if p.subs == nil {
		p.subs = map[string]bool{}
	}
	p.subs[uri] = true
}

func (p *process) unsubscribe(uri string) { delete(p.subs, uri) }

// ensure returns the running server, starting it when it is not. The
// caller holds s.mu.
func (s *server) ensure(ctx context.Context) (*running, error) {
	p := &s.proc
	if p.run != nil {
		return p.run, nil
	}
	if p.gone {
		return nil, errors.New(s.who() + " is no longer served")
	}
	if p.deaths >= maxDeaths {
		what := " exited twice, so gemkit does not start it again"
		if s.spec.Remote() {
			what = " ended its connection twice, so gemkit does not connect to it again"
		}
		return nil, errors.New(s.who() + what + " until gemkit mcp restarts or the extension changes; the last time: " + p.lastErr)
	}
	r, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	p.run = r
	p.up.Store(true)
	return r, nil
}

// watch waits for r to exit and records an exit gemkit did not ask for.
func (s *server) watch(r *running) {
	err := r.wait()
	if err == nil {
		err = errors.New("exit status 0")
	}
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
	r.waitErr = err
	close(r.exited)
	s.mu.Lock()
	p := &s.proc
	p.drop(r)
	if !r.killed.Load() {
		p.deaths++
		p.lastErr = fmt.Sprintf("it exited (%v)", err)
		if s.spec.Remote() {
			p.lastErr = fmt.Sprintf("its connection ended (%v)", err)
		}
		if b := r.broke.Load(); b != nil {
			p.lastErr = "it " + *b + ", so gemkit stopped it"
		}
		p.lastErr += s.stderr.stderrWords("the end of its stderr")
		s.m.log.Warn("an extension's MCP server exited", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
	}
	s.mu.Unlock()
	close(r.done)
}

// stopRun stops r, which broke the rules of its run in the way what
// says (an overlong message, garbage on its stdout, a full data
// folder): the stop counts as one of its deaths.
func (s *server) stopRun(r *running, what string) {
	r.broke.Store(&what)
	s.mu.Lock()
	s.proc.drop(r)
	s.mu.Unlock()
	r.kill()
}

// broke stops r, whose MCP connection ended while it runs on, so that
// the next call starts it again (stopRun).
func (s *server) broke(r *running, what string) error {
	s.stopRun(r, what)
	return s.failure(what + ", so gemkit stopped it; it is started again at the next call")
}

// touch records a use and (re)arms the idle timer. The caller holds s.mu.
func (s *server) touch() { s.proc.touch(s.m.cfg.Idle, s.idleCheck) }

// idleCheck stops the server when nothing used it for the idle time.
func (s *server) idleCheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc.run == nil || !s.proc.idleFor(s.m.cfg.Idle) {
		return
	}
	s.m.log.Debug("MCP server idle; stopped", "extension", s.spec.Extension, "server", s.spec.Server)
	s.proc.kill()
}

// stop stops the server for good.
func (s *server) stop() {
	if s.end != nil {
		s.end()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc.retire()
}

// waitGone waits for the server stopped last to exit.
func (s *server) waitGone() {
	s.mu.Lock()
	r := s.proc.last
	s.mu.Unlock()
	if r != nil {
		<-r.done
	}
}
