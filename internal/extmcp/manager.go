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

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// DefaultIdle is how long a server is kept without a call before it is
// stopped; the next call starts it again.
const DefaultIdle = 5 * time.Minute

// DefaultTimeout bounds a start and a call when neither the entry nor
// the Config says otherwise.
const DefaultTimeout = 60 * time.Second

// Config says how a Manager starts its servers.
type Config struct {
	// Launcher starts the servers in the sandbox; without one no stdio
	// server starts.
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
	// Capabilities is the file of what the servers declared when they
	// last started (completions.go); "" is CapabilitiesPath's.
	Capabilities string
	// ExtensionFolders lists every extension's folders (the extensions
	// folder, each entry, each linked source), read-only to every
	// server, at each start; nil lists those of the store Environ names
	// (extension.EnvFolders).
	ExtensionFolders func() ([]string, error)
}

// Manager runs the servers of a set of Specs.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	servers map[string]*server
	closed  bool

	refusalsMu sync.Mutex // orders the writes of the refusals file
	capsMu     sync.Mutex // orders the writes of the capabilities file
	// listen is Listen's receiver; level the log level a client set
	// (SetLevel). Neither is under mu: a server takes them while it
	// holds its own lock, which Sync takes under mu.
	listen atomic.Pointer[func(Event)]
	level  atomic.Pointer[string]
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
		life, end := context.WithCancel(context.Background())
		m.servers[sp.Key()] = &server{m: m, spec: sp, stderr: &tail{}, life: life, end: end}
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
	// life ends (end) when the server is stopped for good: what works
	// for no caller (the start behind a kept catalog's answer) stops
	// then, before stop waits for s.mu, which it holds.
	life context.Context
	end  context.CancelFunc

	mu      sync.Mutex
	run     *running
	last    *running // the one stop stopped
	catalog Catalog  // what it offers, as last listed
	listed  bool
	stale   atomic.Bool // it said a list changed since it was listed
	// keptTried: the kept catalog was looked for (kept.go); consent:
	// the consent check the next start uses, begun for the answer from
	// it; confirmErr: why the server, started behind that answer, could
	// not list, said at the next listing.
	keptTried  bool
	consent    *verdict
	confirmErr error
	keptJSON   []byte // the kept catalog as this server last read or wrote it
	// subs are the URIs subscribed to (resources/subscribe): sent again
	// when the server starts again, and they keep it from idling.
	subs    map[string]bool
	deaths  int
	lastErr string // why it died the last time
	// declared is what it declared in its initialize answer the last
	// time it started (nil: not started yet); read without s.mu, which a
	// start holds.
	declared atomic.Pointer[mcpclient.Capabilities]
	inflight int
	lastUse  time.Time
	// notHanded: the kinds of credentials allowed of which its last
	// start found no file (Profile.NotHanded), under mu2, which a
	// refusal's report takes while a start holds mu.
	mu2       sync.Mutex
	notHanded map[string]string
	// runStart is when its current run started (Refusal.Start); told
	// are the refusals of that run said in the log (by Refusal.key).
	runStart time.Time
	told     map[string]bool
	// runReadOnly are the other extensions' folders of that run
	// (Profile.ReadOnly), which a refused write names.
	runReadOnly []string
	idle        *time.Timer
	gone        bool // stopped for good (Sync, Close)
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

// failure wraps what went wrong with the server's name and its stderr's
// last lines.
func (s *server) failure(what string) error {
	msg := s.who() + " " + what
	if s.spec.Remote() {
		return errors.New(msg)
	}
	if t := s.stderr.String(); t != "" {
		msg += "; the end of what it printed on stderr:\n" + t
	} else {
		msg += " (it printed nothing on stderr)"
	}
	return errors.New(msg)
}

// stoppedWhileStarting says why a start ended before its time was up:
// what waited for it went (a client that closed the connection or
// cancelled its request, gemkit mcp ending), not the server.
const stoppedWhileStarting = "what waited for it stopped waiting (the client went or cancelled its request, or gemkit mcp ended)"

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
		what := " exited twice, so gemkit does not start it again"
		if s.spec.Remote() {
			what = " ended its connection twice, so gemkit does not connect to it again"
		}
		return nil, errors.New(s.who() + what + " until gemkit mcp restarts or the extension changes; the last time: " + s.lastErr)
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
	r, err := s.startOrConnect(ctx)
	if err != nil {
		return nil, err
	}
	r.caps = r.client.Capabilities()
	s.remember(r.caps)
	s.resume(ctx, r)
	return r, nil
}

// startOrConnect starts a stdio server, or connects to a remote one.
// The caller holds s.mu.
func (s *server) startOrConnect(ctx context.Context) (*running, error) {
	// The consent check begun for an answer from the kept catalog, else
	// one of this start's own.
	v := s.consent
	s.consent = nil
	if v == nil {
		v = s.check()
	}
	if s.spec.Remote() {
		if err := v.wait(ctx); err != nil {
			return nil, err
		}
		return s.connect(ctx)
	}
	// Consent is checked while the sandbox is set up (the Gate of its
	// command): it hashes the extension's folder, which for a server
	// shipped with its node_modules takes as long as the set-up. The
	// program runs only once it has passed.
	r, err := s.startStdio(ctx, v.wait)
	if err != nil {
		// Not agreed to is what the person must act on first, whatever
		// else failed; what no longer waits for the start does not wait
		// for the check either.
		if aerr := v.wait(ctx); aerr != nil && ctx.Err() == nil {
			return nil, aerr
		}
	}
	return r, err
}

// allowed asks the spec's Allowed, in words naming the server.
func (s *server) allowed() error {
	if s.spec.Allowed == nil {
		return nil
	}
	if err := s.spec.Allowed(); err != nil {
		return fmt.Errorf("%s is not started: %w", s.who(), err)
	}
	return nil
}

// startStdio starts a stdio server in the sandbox, exec'd once gate
// passes, and connects to it.
func (s *server) startStdio(ctx context.Context, gate func(context.Context) error) (*running, error) {
	cfg := s.m.cfg
	if s.spec.Unpinned != "" {
		return nil, fmt.Errorf("%s is not started: %s", s.who(), s.spec.Unpinned)
	}
	if cfg.Launcher == nil {
		return nil, fmt.Errorf("%s is not started: gemkit has no sandbox to start it in", s.who())
	}
	root := cfg.DataRoot
	if root == "" {
		var err error
		if root, err = DataRoot(envMap(cfg.Environ)); err != nil {
			return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
		}
	}
	list := cfg.ExtensionFolders
	if list == nil {
		list = func() ([]string, error) { return extension.EnvFolders(envMap(cfg.Environ)) }
	}
	folders, err := list()
	if err != nil {
		return nil, fmt.Errorf("%s is not started: listing the extensions, whose folders it must find read-only: %w", s.who(), err)
	}
	pr, err := BuildProfile(s.spec, cfg.Workspace, root, cfg.Environ, folders)
	if err != nil {
		return nil, fmt.Errorf("%s is not started: %w", s.who(), err)
	}
	if used, err := usage(pr.Data); err == nil && used >= s.dataBound() {
		return nil, s.dataFull(pr.Data, used)
	}
	s.warnProfile(pr)
	tmp, err := os.MkdirTemp("", "gemkit-mcp-server-")
	if err != nil {
		return nil, err
	}
	s.stderr.Reset()
	cmd := &sandbox.Command{
		Policy: pr.Policy(cfg.Workspace, tmp),
		Path:   pr.Path, Args: s.spec.Args, Dir: cfg.Workspace, Stderr: s.stderr,
		Env:    append(pr.Env, "TMPDIR="+tmp),
		OnDeny: s.denied,
		Gate:   gate,
	}
	waiting := ctx
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	srv, err := cfg.Launcher.StartServer(ctx, cmd)
	if err != nil {
		os.RemoveAll(tmp)
		var ue *sandbox.UnenforceableError
		switch {
		case waiting.Err() != nil:
			return nil, fmt.Errorf("%s was not started: %s", s.who(), stoppedWhileStarting)
		case errors.Is(err, sandbox.ErrUnsupported):
			return nil, fmt.Errorf("%s is not started: gemkit runs extensions' MCP servers only inside its sandbox, which it has on Linux only so far", s.who())
		case errors.As(err, &ue):
			return nil, fmt.Errorf("%s is not started: gemkit runs it only inside its sandbox, and this machine cannot provide it (%s)", s.who(), strings.Join(ue.Reasons, "; "))
		}
		return nil, fmt.Errorf("%s could not be started in gemkit's sandbox: %w", s.who(), err)
	}
	r := &running{kill: srv.Kill, wait: srv.Wait, denied: srv.Denied, tmp: tmp, data: pr.Data, readOnly: pr.ReadOnly, exited: make(chan struct{}), done: make(chan struct{})}
	go s.watch(r)
	go s.watchData(r)
	client, err := mcpclient.Stdio(ctx, srv.Stdout, srv.Stdin, s.clientOptions(r))
	if err != nil {
		var why string
		var syntax *json.SyntaxError
		switch {
		case waiting.Err() != nil:
			why = "did not answer MCP's initialize before " + stoppedWhileStarting
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
		r.kill()
		// watch records the exit once the caller lets go of s.mu.
		<-r.exited
		return nil, s.failure(why)
	}
	r.client = client
	s.m.log.Debug("MCP server started", "extension", s.spec.Extension, "server", s.spec.Server, "pid", srv.Pid())
	return r, nil
}

// clientOptions are the options of r's client: its progress routed to
// the calls that asked, its other notifications to the Manager's
// listener (catalog.go).
func (s *server) clientOptions(r *running) mcpclient.Options {
	return mcpclient.Options{Name: "gemkit", Version: s.m.cfg.Version,
		Progress: func(token any, progress, total float64, message string) {
			if t, ok := token.(string); ok {
				if f, ok := r.progress.Load(t); ok {
					f.(Progress)(progress, total, message)
				}
			}
		},
		Events: s.event,
	}
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
	if s.run == r {
		s.run = nil
	}
	if !r.killed.Load() {
		s.deaths++
		s.lastErr = fmt.Sprintf("it exited (%v)", err)
		if s.spec.Remote() {
			s.lastErr = fmt.Sprintf("its connection ended (%v)", err)
		}
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
	r.kill()
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
	if s.inflight > 0 || len(s.subs) > 0 || time.Since(s.lastUse) < s.m.cfg.Idle {
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
		r.kill()
		s.run = nil
		go func() { <-r.done }()
	}
}

// stop stops the server for good.
func (s *server) stop() {
	if s.end != nil {
		s.end()
	}
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
