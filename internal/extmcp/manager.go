package extmcp

import (
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// forwarded counts the calls Forward took.
	forwarded atomic.Int64
	// client is the client a server started for no client's request
	// declares the modes of (SetClient, elicit.go).
	client atomic.Pointer[Client]
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
		m.servers[sp.Key()] = newServer(m, sp)
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

// all are the Manager's servers now, taken under m.mu so that each can
// then be asked without it (a server's own work may take long).
func (m *Manager) all() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	// In the servers' key order, not the map's: the catalog lists them in
	// this order, and of two servers of one extension that list the same
	// tool name, the first keeps the plain name. The same server must
	// keep it in every session.
	keys := slices.Sorted(maps.Keys(m.servers))
	out := make([]*server, len(keys))
	for i, k := range keys {
		out[i] = m.servers[k]
	}
	return out
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
