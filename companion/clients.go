package companion

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
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

// The agents a Client may be recognised as ([Client.Agent]).
var (
	AgentGemini = ide.AgentGemini.Name
	AgentQwen   = ide.AgentQwen.Name
	AgentClaude = ide.AgentClaude.Name
	AgentLLxprt = ide.AgentLLxprt.Name
)

// Client is one agent connected to the companion, for an editor to show.
type Client struct {
	// Name and Version are the clientInfo it sent at initialize.
	Name, Version string
	// Protocol is the MCP protocol version it asked for at initialize.
	Protocol string
	// Agent is the program as a person knows it (AgentGemini, AgentQwen,
	// AgentClaude), "" when not recognised; AgentVersion is that
	// program's version where known. Gemini CLI and Qwen Code send the
	// same clientInfo name (Qwen Code with the version 1.0.0 whatever its
	// own), so they are told apart by their process where the system
	// shows it, else by the protocol version Qwen Code asks for.
	Agent, AgentVersion string
	// Transport is TransportHTTP, TransportStream or TransportClaude.
	Transport string
	// Bridged is set when the client reaches /mcp through the stdio
	// bridge ([Config.BridgeCommand]) rather than by itself; PID and Dir
	// are then the client's, not the bridge's.
	Bridged bool
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
	mu                      sync.Mutex
	name, version, protocol string
	since                   time.Time
	peer                    peerProcess

	// lazy is the connection of a client whose process is looked up only
	// when first asked for (deferPeer), once (lookup).
	lazy   peerConn
	lookup sync.Once
}

// peerProcess is what the system tells of a client's process (peerOf).
type peerProcess struct {
	pid int
	dir string
	// agent and version name the program from its command line; bridged
	// is set when the connection was the stdio bridge's, whose parent is
	// the client.
	agent, version string
	bridged        bool
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
		if p := peerOf(c); p.pid != 0 {
			info.setPeer(p)
		}
	}()
}

// deferPeer leaves the lookup of the client's process (peerOf) until
// someone asks for it ([Server.Clients]), for a client whose agent its
// transport already names: Claude Code on its endpoint. Nothing on its
// connect's path, or beside it, needs the process: the lookup reads the
// descriptors of the machine's processes (62 ms of such reads beside a
// real Claude Code's connect under strace, on a 2-core machine at load
// 33), which competed with the agent's own start as it connected, for a
// status line that only the terminal front-end shows.
func (c *clientInfo) deferPeer(conn peerConn) {
	c.mu.Lock()
	c.lazy = conn
	c.mu.Unlock()
}

// lookupPeer looks up the process of a client left to deferPeer, once;
// a caller that comes while the lookup runs waits for it.
func (c *clientInfo) lookupPeer() {
	c.lookup.Do(func() {
		c.mu.Lock()
		conn := c.lazy
		c.mu.Unlock()
		if conn == (peerConn{}) {
			return
		}
		if p := peerOf(conn); p.pid != 0 {
			c.setPeer(p)
		}
	})
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

// setPeer notes the client's process (peerOf).
func (c *clientInfo) setPeer(p peerProcess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peer = p
}

func (c *clientInfo) set(i initInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.name, c.version, c.protocol, c.since = i.name, i.version, i.protocol, time.Now()
}

func (c *clientInfo) client(transport string) Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := Client{Name: c.name, Version: c.version, Protocol: c.protocol, Transport: transport, Since: c.since,
		PID: c.peer.pid, Dir: c.peer.dir, Bridged: c.peer.bridged}
	switch {
	case transport == TransportClaude:
		cl.Agent, cl.AgentVersion = AgentClaude, c.version
	case c.name != ide.ClientNameHTTP && c.name != ide.ClientNameStdio:
	case c.peer.agent != "":
		cl.Agent, cl.AgentVersion = c.peer.agent, c.peer.version
		if cl.Agent == AgentGemini && cl.AgentVersion == "" {
			cl.AgentVersion = c.version
		}
	case c.version == ide.QwenClientVersion && c.protocol == ide.QwenProtocolVersion:
		cl.Agent = AgentQwen
	default:
		cl.Agent, cl.AgentVersion = AgentGemini, c.version
	}
	return cl
}

// wsPeerKey is the context key of the WebSocket peer whose request is
// being handled (serveMCPPeer).
type wsPeerKey struct{}

// agentOf names the agent behind a Gemini-side request, as [Client.Agent]
// does: the /mcp session's, else the /stream peer's; "" when neither is
// known or the client was not recognised. A lookup of the client's
// process still under way is waited for, as [Server.Clients] does: it may
// tell Qwen Code from Gemini CLI.
func (s *Server) agentOf(ctx context.Context, session string) string {
	s.peers.wait(250 * time.Millisecond)
	if sess := s.sess.get(session); sess != nil {
		return sess.info.client(TransportHTTP).Agent
	}
	if p, ok := ctx.Value(wsPeerKey{}).(*wsPeer); ok {
		return p.info.client(TransportStream).Agent
	}
	return ""
}

// initInfo is what an initialize request says of its client.
type initInfo struct{ name, version, protocol string }

// initializeInfo reads clientInfo and the protocol version from the
// params of an initialize request.
func initializeInfo(params json.RawMessage) initInfo {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(params, &p)
	return initInfo{p.ClientInfo.Name, p.ClientInfo.Version, p.ProtocolVersion}
}

// Clients returns the agents connected now, first connected first. A
// session over /mcp counts from initialize for as long as its event
// stream is open (and before its client opens one); a session whose
// stream closed is kept for a reconnect but not listed until it does. A
// WebSocket client counts from its initialized notification until its
// connection closes. While a new client's process is being looked up it
// waits for it, a quarter of a second at most; a Claude Code's process is
// looked up here, the first time it is listed (deferPeer).
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
		var claude []*wsPeer
		s.claude.mu.Lock()
		for p, ready := range s.claude.peers {
			if ready {
				claude = append(claude, p)
			}
		}
		s.claude.mu.Unlock()
		// Their processes are looked up now, the first time they are
		// asked for (deferPeer), outside the endpoint's lock.
		for _, p := range claude {
			p.info.lookupPeer()
			out = append(out, p.info.client(TransportClaude))
		}
	}
	slices.SortStableFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

// ClientCount is how many agents [Server.Clients] would list now, without
// looking up their processes or waiting for a lookup: cheap enough for
// Config.OnClientsChange to tell a connect from a disconnect.
func (s *Server) ClientCount() int {
	n := 0
	for _, sess := range s.sess.all() {
		sess.mu.Lock()
		if !sess.gotGET || len(sess.streams) > 0 {
			n++
		}
		sess.mu.Unlock()
	}
	s.streams.mu.Lock()
	for _, ready := range s.streams.peers {
		if ready {
			n++
		}
	}
	s.streams.mu.Unlock()
	if s.claude != nil {
		s.claude.mu.Lock()
		for _, ready := range s.claude.peers {
			if ready {
				n++
			}
		}
		s.claude.mu.Unlock()
	}
	return n
}

// clientsChanged tells Config.OnClientsChange that a client connected or
// disconnected. It is never called with a lock of the server held.
func (s *Server) clientsChanged() {
	if f := s.cfg.OnClientsChange; f != nil {
		f()
	}
}

// processAgent names the program of a client's command line: Qwen Code
// and Gemini CLI run as Node scripts of their npm packages
// (@qwen-code/qwen-code's cli.js, @google/gemini-cli's bundle/gemini.js)
// or through their commands qwen and gemini; LLxprt Code
// (@vybestack/llxprt-code, command llxprt) sends Qwen Code's clientInfo
// too (streamable-http-client 1.0.0: IdeClient.establishConnection in
// vybestack/llxprt-code packages/ide-integration/src/ide/ide-client.ts).
// For Qwen Code, whose clientInfo version is a constant, the version is
// read from the package.json beside its script.
func processAgent(args []string) (agent, version string) {
	a, script, ok := ide.AgentOfCommand(args)
	if !ok {
		return "", ""
	}
	if a.ID == ide.AgentGemini.ID {
		return a.Name, ""
	}
	return a.Name, packageVersion(script, a.Package)
}

// packageVersion is the version in the package.json of the npm package
// name that holds script (in its folder or the one above), or "".
func packageVersion(script, name string) string {
	dir := filepath.Dir(script)
	for range 2 {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil && len(b) < 1<<20 {
			var p struct{ Name, Version string }
			if json.Unmarshal(b, &p) == nil && p.Name == name {
				return p.Version
			}
		}
		dir = filepath.Dir(dir)
	}
	return ""
}
