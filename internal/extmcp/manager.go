package extmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// DefaultIdle is how long a server is kept without a call before it is
// stopped; the next call starts it again.
const DefaultIdle = 5 * time.Minute

// DefaultTimeout bounds a start and a call when neither the entry nor
// the Config says otherwise.
const DefaultTimeout = 60 * time.Second

// Config says how a Manager starts its servers.
type Config struct {
	// Launcher starts the servers in the sandbox.
	Launcher *sandbox.Launcher
	// Workspace is the folder the servers read and run in.
	Workspace string
	// Environ is the person's environment, from which the profile takes
	// PATH and HOME (to find programs and the closed folders); nil is
	// os.Environ().
	Environ []string
	// DataRoot holds the extensions' data folders; "" is DataRoot's.
	DataRoot string
	// Timeout bounds a call of a server whose entry sets no timeout, and
	// every start; 0 is DefaultTimeout.
	Timeout time.Duration
	// Idle is how long an unused server is kept; 0 is DefaultIdle.
	Idle time.Duration
	// Version is gemkit's version, given to the servers as the client's.
	Version string
	// Logger receives what happens; nil discards it.
	Logger *slog.Logger
	// Refusals is the file of the last refusals (see Refusal); "" is
	// RefusalsPath's.
	Refusals string
}

// Manager runs the servers of a set of Specs.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	servers map[string]*server
	closed  bool

	refusalsMu sync.Mutex // orders the writes of the refusals file
}

// NewManager returns a Manager that runs nothing yet.
func NewManager(cfg Config) *Manager {
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: log, servers: map[string]*server{}}
}

// Sync makes specs the servers the Manager runs: a server whose spec is
// gone or changed is stopped (a changed one starts afresh at its next
// use). It reports whether anything changed.
func (m *Manager) Sync(specs []Spec) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	keep := map[string]bool{}
	for _, sp := range specs {
		keep[sp.Key()] = true
		if old := m.servers[sp.Key()]; old != nil {
			if old.spec.same(sp) {
				continue
			}
			old.stop()
		}
		m.servers[sp.Key()] = &server{m: m, spec: sp, stderr: &tail{}}
		changed = true
	}
	for k, s := range m.servers {
		if !keep[k] {
			s.stop()
			delete(m.servers, k)
			changed = true
		}
	}
	return changed
}

// Len is how many servers the Manager has.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.servers)
}

// Tool is one tool of a server.
type Tool struct {
	Spec Spec
	mcpclient.Tool
}

// Failure is a server whose tools could not be listed, with why in
// words.
type Failure struct {
	Spec Spec
	Err  error
}

// Tools lists the tools of every server, starting those not listed yet
// (at once, each bounded by its timeout). A server that cannot start or
// list is a Failure and adds no tools; the others are listed all the
// same.
func (m *Manager) Tools(ctx context.Context) ([]Tool, []Failure) {
	m.mu.Lock()
	all := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		all = append(all, s)
	}
	m.mu.Unlock()
	type answer struct {
		tools []mcpclient.Tool
		err   error
	}
	answers := make([]answer, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := s.list(ctx)
			answers[i] = answer{t, err}
		}()
	}
	wg.Wait()
	var tools []Tool
	var failed []Failure
	for i, s := range all {
		if answers[i].err != nil {
			failed = append(failed, Failure{s.spec, answers[i].err})
			continue
		}
		for _, t := range answers[i].tools {
			tools = append(tools, Tool{Spec: s.spec, Tool: t})
		}
	}
	return tools, failed
}

// Progress receives a call's progress notifications: the progress, the
// total (0: unknown) and the server's message.
type Progress func(progress, total float64, message string)

// Call calls tool of the server key (Spec.Key) with args, bounded by the
// server's timeout, and returns the server's result as it encoded it. An
// error says in words which extension's server failed and how, with the
// end of what it printed on stderr. progress, when not nil, asks the
// server for progress and receives it.
func (m *Manager) Call(ctx context.Context, key, tool string, args json.RawMessage, progress Progress) (json.RawMessage, error) {
	m.mu.Lock()
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil {
		return nil, errors.New("this MCP server is no longer served (its extension changed); list the tools again")
	}
	return s.call(ctx, tool, args, progress)
}

// Close stops every server and waits for them to go.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
	for _, s := range all {
		s.waitGone()
	}
}

// maxDeaths is how many times a server may die before it is not started
// again: once it died, it is started again once.
const maxDeaths = 2

// server is one spec's server: not running, starting, or running.
type server struct {
	m      *Manager
	spec   Spec
	stderr *tail

	mu       sync.Mutex
	run      *running
	last     *running // the one stop stopped
	tools    []mcpclient.Tool
	listed   bool
	deaths   int
	lastErr  string // why it died the last time
	inflight int
	lastUse  time.Time
	idle     *time.Timer
	gone     bool // stopped for good (Sync, Close)
}

// running is a started server.
type running struct {
	srv     *sandbox.Server
	client  *mcpclient.Client
	tmp     string
	data    string        // its data folder
	exited  chan struct{} // closed when it exited
	waitErr error         // how it exited, once exited is closed
	done    chan struct{} // closed when watch recorded its exit
	killed  atomic.Bool
	// broke, once set, is how the server broke its MCP connection while
	// it ran on: gemkit then stopped it, which counts as a death.
	broke atomic.Pointer[string]
	// progress routes the server's progress notifications to the calls
	// that asked, by the token gemkit gave the call.
	progress sync.Map // string -> Progress
	tokens   atomic.Int64
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
	return fmt.Sprintf("extension %s's MCP server %s", Printable(s.spec.Extension), Printable(s.spec.Server))
}

// failure wraps what went wrong with the server's name and its stderr's
// last lines.
func (s *server) failure(what string) error {
	msg := s.who() + " " + what
	if t := s.stderr.String(); t != "" {
		msg += "; the end of what it printed on stderr:\n" + t
	} else {
		msg += " (it printed nothing on stderr)"
	}
	return errors.New(msg)
}

// ensure returns the running server, starting it when it is not. The
// caller holds s.mu.
func (s *server) ensure(ctx context.Context) (*running, error) {
	if s.run != nil {
		return s.run, nil
	}
	if s.gone {
		return nil, errors.New(s.who() + " is no longer served")
	}
	if s.deaths >= maxDeaths {
		return nil, errors.New(s.who() + " exited twice, so gemkit does not start it again until gemkit mcp restarts or the extension changes; the last time: " + s.lastErr)
	}
	r, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	s.run = r
	return r, nil
}

// start starts the server in the sandbox and connects to it, bounded by
// its timeout.
func (s *server) start(ctx context.Context) (*running, error) {
	cfg := s.m.cfg
	if s.spec.Allowed != nil {
		if err := s.spec.Allowed(); err != nil {
			return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
		}
	}
	root := cfg.DataRoot
	if root == "" {
		var err error
		if root, err = DataRoot(envMap(cfg.Environ)); err != nil {
			return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
		}
	}
	pr, err := BuildProfile(s.spec, cfg.Workspace, root, cfg.Environ)
	if err != nil {
		return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
	}
	tmp, err := os.MkdirTemp("", "gemkit-mcp-server-")
	if err != nil {
		return nil, err
	}
	s.stderr.Reset()
	cmd := &sandbox.Command{
		Policy: pr.Policy(cfg.Workspace, envMap(cfg.Environ)["HOME"], s.spec.Dir, tmp),
		Path:   pr.Path, Args: s.spec.Args, Dir: cfg.Workspace, Stderr: s.stderr,
		Env:    append(pr.Env, "TMPDIR="+tmp),
		OnDeny: s.denied,
	}
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	srv, err := cfg.Launcher.StartServer(ctx, cmd)
	if err != nil {
		os.RemoveAll(tmp)
		var ue *sandbox.UnenforceableError
		switch {
		case errors.Is(err, sandbox.ErrUnsupported):
			return nil, fmt.Errorf("%s is not started: gemkit runs extensions' MCP servers only inside its sandbox, which it has on Linux only so far", s.who())
		case errors.As(err, &ue):
			return nil, fmt.Errorf("%s is not started: gemkit runs it only inside its sandbox, and this machine cannot provide it (%s)", s.who(), strings.Join(ue.Reasons, "; "))
		}
		return nil, fmt.Errorf("%s could not be started in gemkit's sandbox: %w", s.who(), err)
	}
	r := &running{srv: srv, tmp: tmp, data: pr.Data, exited: make(chan struct{}), done: make(chan struct{})}
	go s.watch(r)
	client, err := mcpclient.Stdio(ctx, srv.Stdout, srv.Stdin, mcpclient.Options{Name: "gemkit", Version: cfg.Version,
		Progress: func(token any, progress, total float64, message string) {
			if t, ok := token.(string); ok {
				if f, ok := r.progress.Load(t); ok {
					f.(Progress)(progress, total, message)
				}
			}
		}})
	if err != nil {
		var why string
		var syntax *json.SyntaxError
		switch {
		case ctx.Err() != nil:
			why = "did not answer MCP's initialize within " + s.startTimeout().String()
		case errors.As(err, &syntax) || strings.Contains(err.Error(), "invalid character"):
			why = "printed something other than MCP's JSON-RPC on its stdout (" + oneLine(err.Error()) + ")"
		case r.exitedSoon():
			why = "exited at once (" + r.waitErr.Error() + ")"
		default:
			why = "did not start as an MCP server (" + oneLine(err.Error()) + ")"
		}
		r.killed.Store(true)
		srv.Kill()
		// watch records the exit once the caller lets go of s.mu.
		<-r.exited
		return nil, s.failure(why)
	}
	r.client = client
	s.m.log.Debug("MCP server started", "extension", s.spec.Extension, "server", s.spec.Server, "pid", srv.Pid())
	return r, nil
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

// watch waits for r to exit and records an exit gemkit did not ask for.
func (s *server) watch(r *running) {
	err := r.srv.Wait()
	if err == nil {
		err = errors.New("exit status 0")
	}
	os.RemoveAll(r.tmp)
	r.waitErr = err
	close(r.exited)
	s.mu.Lock()
	if s.run == r {
		s.run = nil
	}
	if !r.killed.Load() {
		s.deaths++
		s.lastErr = fmt.Sprintf("it exited (%v)", err)
		if b := r.broke.Load(); b != nil {
			s.lastErr = "it " + *b + ", so gemkit stopped it"
		}
		if t := s.stderr.String(); t != "" {
			s.lastErr += "; the end of its stderr:\n" + t
		}
		s.m.log.Warn("an extension's MCP server exited", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
	}
	s.mu.Unlock()
	close(r.done)
}

// list returns the server's tools, starting it to list them once.
func (s *server) list(ctx context.Context) ([]mcpclient.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed {
		return s.tools, nil
	}
	r, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	tools, err := r.client.ListTools(lctx)
	if err != nil {
		if lctx.Err() != nil {
			return nil, s.failure("did not list its tools within " + s.startTimeout().String())
		}
		return nil, s.failure("could not list its tools: " + oneLine(err.Error()))
	}
	s.tools, s.listed = tools, true
	s.touch()
	return tools, nil
}

// call calls one tool.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage, progress Progress) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	s.mu.Lock()
	r, err := s.ensure(ctx)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.inflight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.touch()
		s.mu.Unlock()
	}()
	var token any
	if progress != nil {
		t := fmt.Sprintf("gemkit-%d", r.tokens.Add(1))
		r.progress.Store(t, progress)
		// The SDK may hand on a notification just after the result it
		// went before: the route stays a moment longer.
		defer time.AfterFunc(time.Second, func() { r.progress.Delete(t) })
		token = t
	}
	before := r.srv.Denied()
	res, err := r.client.CallToolRaw(ctx, tool, args, token)
	// What the sandbox refused the server during the call is said to
	// the model with the result (the proxy, the resolver and the watch
	// of its connect calls record a refusal before they answer it, so
	// before the server can answer), and a refused write the result
	// tells of to the person too.
	rs := refusedSince(s.spec, before, r.srv.Denied())
	if err == nil {
		for _, w := range s.refusedWrites(args, res, r.data, r.tmp) {
			s.report(w)
			rs = append(rs, w)
		}
	}
	if len(rs) > 0 {
		if err == nil {
			return withLine(res, forModel(rs)), nil
		}
		err = fmt.Errorf("%w; %s", err, forModel(rs))
	}
	if err == nil {
		return res, nil
	}
	if ended, why := r.client.Ended(); ended && ctx.Err() == nil && errors.Is(why, mcpclient.ErrMessageTooLarge) {
		return nil, s.broke(r, fmt.Sprintf("printed a message over %d MiB on its stdout during the call of %s", mcpclient.MaxMessage>>20, Printable(tool)))
	}
	if ctx.Err() == nil && r.exitedSoon() {
		return nil, s.failure("exited during the call of " + Printable(tool) + "; it is started again at the next call")
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, s.failure("did not answer " + Printable(tool) + " within " + s.timeout().String())
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if ended, why := r.client.Ended(); ended {
		return nil, s.broke(r, "broke its MCP connection during the call of "+Printable(tool)+" ("+oneLine(why.Error())+")")
	}
	return nil, s.failure("failed to answer " + Printable(tool) + ": " + oneLine(err.Error()))
}

// broke stops r, whose MCP connection ended while it runs on (an
// overlong message, garbage on its stdout), so that the next call starts
// it again; the stop counts as one of its deaths.
func (s *server) broke(r *running, what string) error {
	r.broke.Store(&what)
	s.mu.Lock()
	if s.run == r {
		s.run = nil
	}
	s.mu.Unlock()
	r.srv.Kill()
	return s.failure(what + ", so gemkit stopped it; it is started again at the next call")
}

// touch records a use and (re)arms the idle timer. The caller holds s.mu.
func (s *server) touch() {
	s.lastUse = time.Now()
	idle := s.m.cfg.Idle
	if s.idle == nil {
		s.idle = time.AfterFunc(idle, s.idleCheck)
		return
	}
	s.idle.Reset(idle)
}

// idleCheck stops the server when nothing used it for the idle time.
func (s *server) idleCheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return
	}
	if s.inflight > 0 || time.Since(s.lastUse) < s.m.cfg.Idle {
		s.idle.Reset(s.m.cfg.Idle)
		return
	}
	s.m.log.Debug("MCP server idle; stopped", "extension", s.spec.Extension, "server", s.spec.Server)
	s.kill()
}

// kill stops the running server, if any. The caller holds s.mu.
func (s *server) kill() {
	if r := s.run; r != nil {
		r.killed.Store(true)
		if r.client != nil {
			_ = r.client.Close()
		}
		r.srv.Kill()
		s.run = nil
		go func() { <-r.done }()
	}
}

// stop stops the server for good.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.last = s.run
	s.kill()
}

// waitGone waits for the server stopped last to exit.
func (s *server) waitGone() {
	s.mu.Lock()
	r := s.last
	s.mu.Unlock()
	if r != nil {
		<-r.done
	}
}

func oneLine(s string) string {
	return Printable(strings.Join(strings.Fields(s), " "))
}
