package companion

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Transports of a Client.
const (
	// TransportHTTP is MCP over Streamable HTTP at /mcp: the Gemini CLI.
	TransportHTTP = "http"
	// TransportStream is MCP over WebSocket at /stream.
	TransportStream = "websocket"
	// TransportClaude is Claude Code's WebSocket endpoint.
	TransportClaude = "claude"
)

// Client is one agent connected to the companion, for an editor to show.
type Client struct {
	// Name and Version are the clientInfo it sent at initialize.
	Name, Version string
	// Transport is TransportHTTP, TransportStream or TransportClaude.
	Transport string
	// Since is when it initialized.
	Since time.Time
	// PID and Dir are the client's process and its working folder, where
	// the system tells them (Linux: the loopback socket's owner); 0 and ""
	// elsewhere.
	PID int
	Dir string
}

// clientInfo is what a client says of itself at initialize, and when.
type clientInfo struct {
	mu            sync.Mutex
	name, version string
	since         time.Time
	pid           int
	dir           string
}

// peerConn is the two ends of a client's connection, "host:port" each.
type peerConn struct{ remote, local string }

// findPeer looks up the client's process and folder (peerOf) off the
// request's path, then tells Config.OnClientsChange.
func (s *Server) findPeer(info *clientInfo, c peerConn) {
	s.peers.start()
	go func() {
		defer s.clientsChanged()
		defer s.peers.done()
		if pid, dir := peerOf(c); pid != 0 {
			info.setPeer(pid, dir)
		}
	}()
}

// peerLookups counts the lookups under way, so that Clients can wait a
// moment for them: a client listed before its process is known would be
// listed again, changed, a moment later.
type peerLookups struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

func (p *peerLookups) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n++
}

func (p *peerLookups) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 {
		close(p.idle)
	}
}

// wait returns once no lookup is under way, or after d.
func (p *peerLookups) wait(d time.Duration) {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return
	}
	idle := p.idle
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// setPeer notes the client's process and folder (peerOf).
func (c *clientInfo) setPeer(pid int, dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pid, c.dir = pid, dir
}

func (c *clientInfo) set(name, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.name, c.version, c.since = name, version, time.Now()
}

func (c *clientInfo) client(transport string) Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Client{Name: c.name, Version: c.version, Transport: transport, Since: c.since, PID: c.pid, Dir: c.dir}
}

// initializeInfo reads clientInfo from the params of an initialize request.
func initializeInfo(params json.RawMessage) (name, version string) {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(params, &p)
	return p.ClientInfo.Name, p.ClientInfo.Version
}

// Clients returns the agents connected now, first connected first. A
// session over /mcp counts from initialize for as long as its event
// stream is open (and before its client opens one); a session whose
// stream closed is kept for a reconnect but not listed until it does. A
// WebSocket client counts from its initialized notification until its
// connection closes. While a new client's process is being looked up it
// waits for it, a quarter of a second at most.
func (s *Server) Clients() []Client {
	// A lookup takes some 15 ms; the list waits for it rather than
	// naming a client twice.
	s.peers.wait(250 * time.Millisecond)
	var out []Client
	for _, sess := range s.sess.all() {
		sess.mu.Lock()
		connected := !sess.gotGET || len(sess.streams) > 0
		sess.mu.Unlock()
		if connected {
			out = append(out, sess.info.client(TransportHTTP))
		}
	}
	s.streams.mu.Lock()
	for p, ready := range s.streams.peers {
		if ready {
			out = append(out, p.info.client(TransportStream))
		}
	}
	s.streams.mu.Unlock()
	if s.claude != nil {
		s.claude.mu.Lock()
		for p, ready := range s.claude.peers {
			if ready {
				out = append(out, p.info.client(TransportClaude))
			}
		}
		s.claude.mu.Unlock()
	}
	slices.SortStableFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

// clientsChanged tells Config.OnClientsChange that a client connected or
// disconnected. It is never called with a lock of the server held.
func (s *Server) clientsChanged() {
	if f := s.cfg.OnClientsChange; f != nil {
		f()
	}
}
