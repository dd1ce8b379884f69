package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// Resolver resolves host names for the proxy. net.DefaultResolver is one;
// tests inject a map so that a name like allowed.test reaches a loopback
// server.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Denial is one connection the proxy refused.
type Denial struct {
	Host string `json:"host"`
	// Path is what a write refused (Method WriteMethod) named.
	Path   string    `json:"path,omitempty"`
	Port   int       `json:"port"`
	Method string    `json:"method"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Count is how many refusals alike (method, host, port, reason)
	// this one stands for; the first one's time is At.
	Count int `json:"count"`
	// Addr is, for an allowed name refused for the private address its
	// lookup gave (PrivateReason), that address: listing it too allows
	// it.
	Addr string `json:"addr,omitempty"`
}

func (d Denial) String() string {
	s := fmt.Sprintf("%s %s:%d denied: %s", d.Method, d.Host, d.Port, d.Reason)
	if d.Path != "" {
		s = fmt.Sprintf("%s %s denied: %s", d.Method, d.Path, d.Reason)
	}
	if d.Count > 1 {
		s += fmt.Sprintf(" (%d times)", d.Count)
	}
	return s
}

// NotAllowed is the reason of a connection refused because its host is
// not in the allowed hosts: the one refusal that allowing the host ends.
const NotAllowed = "host not in network.allowedHosts"

// Bounds of what a tool can make the proxy keep or print: a request's
// line and headers, a host name in a denial, the number of distinct
// denials kept and reported.
const (
	maxRequestHeaderBytes = 16 << 10
	maxDenialHost         = 255
	maxDenialPath         = 4096
	maxDenials            = 64
)

// denialKey identifies refusals alike.
type denialKey struct {
	method, host, path, reason string
	port                       int
}

// cut bounds a string the tool chose before gemkit keeps or prints it.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
}

// Proxy is an HTTP(S) proxy that lets a tool reach only its allowed hosts.
// It understands CONNECT (for TLS and any TCP stream) and plain
// absolute-form HTTP requests; names are checked before anything is
// resolved, and resolving is the proxy's job, never the tool's.
type Proxy struct {
	// AllowPrivate lets allowed names resolve to loopback and private
	// addresses; tests set it to reach their loopback servers by name.
	AllowPrivate bool
	// OwnServer reports whether a loopback port is one of gemkit's own
	// servers (Policy.OwnServer); such a port is refused on every address
	// of this machine, whatever the allowlist says.
	OwnServer func(port int) bool
	// Received, when set, counts the bytes the hosts send the tool
	// through the proxy as they arrive: what an install fetched so far.
	Received *atomic.Int64

	rules    []permission.Host
	resolver Resolver
	log      *slog.Logger
	onDeny   func(Denial)

	mu      sync.Mutex
	denied  []Denial
	index   map[denialKey]int // position in denied
	dropped int               // refusals not kept: past maxDenials distinct ones
	srv     *http.Server
	wg      sync.WaitGroup
	tunnel  map[net.Conn]struct{} // hijacked connections, closed by Close
	closed  bool                  // Close has begun: no new tunnel starts
	// resolverConn is the socket of the resolver served beside the
	// proxy (ServeResolver), closed by Close.
	resolverConn net.PacketConn
}

// NewProxy builds a proxy for the allowedHosts entries, read with the
// same rules the manifest validation and the consent text use
// (permission.ParseHost): a bare name allows any port, an origin its
// scheme's port, an explicit port only that port. resolver may be nil
// (net.DefaultResolver); onDeny, if set, is called for every refusal.
func NewProxy(allowedHosts []string, resolver Resolver, onDeny func(Denial), log *slog.Logger) (*Proxy, error) {
	p := &Proxy{resolver: resolver, onDeny: onDeny, log: log}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	for _, h := range allowedHosts {
		r, err := permission.ParseHost(h)
		if err != nil {
			return nil, fmt.Errorf("network.allowedHosts entry %q %v", h, err)
		}
		p.rules = append(p.rules, r)
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: maxRequestHeaderBytes, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	return p, nil
}

// Serve answers proxy requests on l until Close.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the proxy and every tunnel it carries.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	if p.resolverConn != nil {
		p.resolverConn.Close()
	}
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnel {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Denied returns the connections refused so far: one Denial per distinct
// refusal (with its Count), at most maxDenials of them.
func (p *Proxy) Denied() []Denial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Denial(nil), p.denied...)
}

// Dropped is the number of refusals not in Denied: they came after
// maxDenials distinct ones.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Allowed reports whether host:port is in the allowlist.
func (p *Proxy) Allowed(host string, port int) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range p.rules {
		if r.Matches(host, port) {
			return true
		}
	}
	return false
}

func (p *Proxy) deny(w http.ResponseWriter, method, host string, port int, reason string) {
	p.denyAddr(w, method, host, port, reason, "")
}

// denyAddr is deny of a name refused for the private address addr its
// lookup gave.
func (p *Proxy) denyAddr(w http.ResponseWriter, method, host string, port int, reason, addr string) {
	d := p.recordAddr(method, host, port, reason, addr)
	http.Error(w, "gemkit sandbox: "+d.String(), http.StatusForbidden)
}

// record keeps a refusal, counted with those alike, and reports the first
// of each distinct one. It returns the refusal as kept.
func (p *Proxy) record(method, host string, port int, reason string) Denial {
	return p.recordAddr(method, host, port, reason, "")
}

func (p *Proxy) recordAddr(method, host string, port int, reason, addr string) Denial {
	return p.recordDenial(Denial{Host: cut(host, maxDenialHost), Port: port, Method: cut(method, 32), Reason: cut(reason, 512), At: time.Now(), Count: 1, Addr: addr})
}

// WriteMethod is the Method of a Denial of a write, whose Path says
// what the tool tried to write.
const WriteMethod = "write"

// Why a write was refused (a Denial's Reason).
const (
	WriteWorkspace = "the workspace is read-only to it"
	WriteExtension = "its extension's folder, read-only to it whatever is allowed"
	WriteProtected = "a protected path of the workspace, read-only whatever is allowed"
	WriteReadOnly  = "the folder of another extension, read-only to every sandboxed process"
	WriteOutside   = "outside what it may write"
)

// recordWrite records the refused write of path (Method WriteMethod).
func (p *Proxy) recordWrite(path, reason string) Denial {
	return p.recordDenial(Denial{Path: cut(path, maxDenialPath), Method: WriteMethod, Reason: cut(reason, 512), At: time.Now(), Count: 1})
}

// recordDenial is record of d, a connection or a write.
func (p *Proxy) recordDenial(d Denial) Denial {
	k := denialKey{d.Method, d.Host, d.Path, d.Reason, d.Port}
	p.mu.Lock()
	if p.index == nil {
		p.index = map[denialKey]int{}
	}
	i, seen := p.index[k]
	report := false
	switch {
	case seen:
		p.denied[i].Count++
	case len(p.denied) < maxDenials:
		p.index[k] = len(p.denied)
		p.denied = append(p.denied, d)
		report = true
	default:
		p.dropped++
	}
	p.mu.Unlock()
	if !report {
		return d
	}
	// Reported once per distinct refusal: to the caller when it
	// listens, else in the log.
	what, args := "sandbox proxy denied a connection", []any{"method", d.Method, "host", d.Host, "port", d.Port, "reason", d.Reason}
	if d.Path != "" {
		what, args = "sandbox refused a write", []any{"path", d.Path, "reason", d.Reason}
	}
	if p.onDeny != nil {
		p.log.Debug(what, args...)
		p.onDeny(d)
	} else {
		p.log.Warn(what, args...)
	}
	return d
}

// splitTarget splits host[:port] and puts the host in the canonical form
// that is both checked and dialled: lower case, no trailing dot, no
// brackets.
func splitTarget(hostport string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	port := defPort
	if err != nil {
		if defPort == 0 {
			return "", 0, err
		}
		host = hostport
	} else {
		port, err = strconv.Atoi(ps)
		if err != nil || port < 1 || port > 65535 {
			return "", 0, fmt.Errorf("bad port %q", ps)
		}
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return "", 0, fmt.Errorf("no host in %q", hostport)
	}
	return host, port, nil
}

// dial resolves host with the proxy's resolver and connects to the first
// address that answers. Every connection to this machine (machine.has)
// comes from permission.ProxySource, whatever form of address the tool
// named; one that cannot is refused (sourceError).
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	var addrs []net.IPAddr
	m := thisMachine()
	if ip := net.ParseIP(host); ip != nil {
		// An IP literal passed the allowlist only because it is listed.
		addrs = []net.IPAddr{{IP: ip}}
	} else if host == "localhost" {
		// Listed as "localhost" (a local model or dev server): IPv4
		// loopback, never a DNS answer, and only for that entry. Not ::1:
		// no connection to it can come from permission.ProxySource.
		addrs = []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}
	} else {
		var err error
		addrs, err = p.resolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		if !p.AllowPrivate {
			// A private address (or this machine's) is reached by a name
			// only when it is listed too, on this port: a name alone
			// could be made to point at this machine's or this
			// network's services by whoever answers its lookup (DNS
			// rebinding), while a company mirror at 10.0.0.5 is allowed
			// by naming both. An address not listed stays refused,
			// whatever the name.
			kept := addrs[:0:0]
			var private net.IP
			for _, a := range addrs {
				switch {
				case !m.special(a.IP):
				case p.Allowed(a.IP.String(), port):
				default:
					if private == nil {
						private = a.IP
					}
					continue
				}
				kept = append(kept, a)
			}
			if len(kept) == 0 && private != nil {
				return nil, &privateError{host: host, ip: private, port: port}
			}
			addrs = kept
		}
	}
	if p.OwnServer != nil {
		for _, a := range addrs {
			if m.has(a.IP) && p.OwnServer(port) {
				return nil, &ownServerError{port: port}
			}
		}
	}
	var last, refused error
	dialled := false
	for _, a := range addrs {
		to, d, err := dialerTo(a.IP, m)
		if err != nil {
			refused = err
			continue
		}
		dialled = true
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(to.String(), strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		if d.LocalAddr != nil && errors.Is(err, syscall.EADDRNOTAVAIL) {
			err = &sourceError{ip: a.IP, err: err}
		}
		last = err
	}
	switch {
	case !dialled && refused != nil:
		return nil, refused
	case last == nil:
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return nil, last
}

// dialerTo returns the address to connect to for ip and the dialer to
// connect with. A connection to this machine (m.has) connects from
// permission.ProxySource, an address of its own that gemkit's servers
// refuse, so that what comes through a sandbox's proxy cannot pass for a
// local client of theirs or of any other local service, whatever the tool
// knows (their token, a port the proxy did not recognise) and whatever
// form of this machine's address it named: the unspecified address is
// dialled as 127.0.0.1, an IPv4-mapped one as the IPv4 address it maps.
// An IPv6 address of this machine is refused: ProxySource is IPv4, and
// from ::1 or an interface's own IPv6 address a connection would look
// like any local client's.
func dialerTo(ip net.IP, m machine) (net.IP, net.Dialer, error) {
	var d net.Dialer
	if !m.has(ip) {
		return ip, d, nil
	}
	v4 := ip.To4()
	if v4 == nil {
		return nil, d, &sourceError{ip: ip}
	}
	if v4.IsUnspecified() {
		v4 = net.IPv4(127, 0, 0, 1).To4()
	}
	d.LocalAddr = &net.TCPAddr{IP: net.IP(permission.ProxySource.AsSlice())}
	d.Control = bindNoPort
	return v4, d, nil
}

// sourceError is a connection to this machine that the proxy cannot make
// from permission.ProxySource: one over IPv6, or one where the address
// cannot be bound (only 127.0.0.1 is configured on macOS's loopback).
// Made from any other source it would pass for a local client's.
type sourceError struct {
	ip  net.IP
	err error
}

func (e *sourceError) Error() string {
	s := fmt.Sprintf("%s is this machine, and the sandbox proxy reaches this machine only from its own address %s, which gemkit's servers refuse", e.ip, permission.ProxySource)
	if e.ip.To4() == nil {
		s += " and which is IPv4; list the service's IPv4 address (127.0.0.1) or localhost"
	}
	if e.err != nil {
		s += fmt.Sprintf(" (%v)", e.err)
	}
	return s
}

func (e *sourceError) Unwrap() error { return e.err }

// privateError is an allowed name that resolves only to loopback, private
// or link-local addresses: following it would let a tool reach this
// machine's or this network's own services by a name that a DNS answer
// controls (DNS rebinding).
type privateError struct {
	host string
	ip   net.IP
	port int
}

// PrivateReason begins the reason of a name refused for the private
// address its lookup gave (Denial.Addr).
const PrivateReason = "resolves to the private address"

func (e *privateError) Error() string {
	return fmt.Sprintf("%s %s %s (special-purpose, or this machine's own); the sandbox proxy reaches such an address by a name only when allowedHosts lists the address too (%s), beside the name: a name alone could be made to point at this machine's or this network's services", e.host, PrivateReason, e.ip, net.JoinHostPort(e.ip.String(), strconv.Itoa(e.port)))
}

// ownServerError is a connection to one of gemkit's own servers on this
// machine (the IDE companion, its Claude Code endpoint or `gemkit mcp
// --http`) or another IDE companion, whose tokens let a client write files
// and run tools.
type ownServerError struct{ port int }

func (e *ownServerError) Error() string {
	return fmt.Sprintf("port %d on this machine is one of gemkit's own servers (the IDE companion, its Claude Code endpoint or gemkit mcp --http) or another IDE companion's; no tool may reach them, whatever allowedHosts lists", e.port)
}

// refusal is the reason to report for a dial error that is a refusal
// rather than a failure, and the private address a name was refused
// for.
func refusal(err error) (why, addr string, ok bool) {
	var pe *privateError
	var oe *ownServerError
	var se *sourceError
	switch {
	case errors.As(err, &se):
		return se.Error(), "", true
	case errors.As(err, &pe):
		return pe.Error(), pe.ip.String(), true
	case errors.As(err, &oe):
		return oe.Error(), "", true
	}
	return "", "", false
}

// ServeHTTP handles one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.deny(w, r.Method, r.Host, 0, "not a proxy request (want CONNECT or an absolute http:// URL)")
		return
	}
	host, port, err := splitTarget(r.URL.Host, 80)
	if err != nil {
		p.deny(w, r.Method, r.URL.Host, 0, err.Error())
		return
	}
	if !p.Allowed(host, port) {
		p.deny(w, r.Method, host, port, NotAllowed)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return p.dial(ctx, host, port)
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if why, addr, ok := refusal(err); ok {
		p.denyAddr(w, r.Method, host, port, why, addr)
		return
	}
	if err != nil {
		http.Error(w, "gemkit sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, p.counted(resp.Body))
}

// counted is r, its bytes added to Received as they are read when it is
// set.
func (p *Proxy) counted(r io.Reader) io.Reader {
	if p.Received == nil {
		return r
	}
	return &countingReader{r: r, n: p.Received}
}

// countingReader adds what it reads to n. It hides r's WriterTo, so a
// counted tunnel is copied through a buffer rather than spliced.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitTarget(r.Host, 0)
	if err != nil {
		p.deny(w, "CONNECT", r.Host, 0, "CONNECT needs host:port")
		return
	}
	if !p.Allowed(host, port) {
		p.deny(w, "CONNECT", host, port, NotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	upstream, err := p.dial(ctx, host, port)
	cancel()
	if why, addr, ok := refusal(err); ok {
		p.denyAddr(w, "CONNECT", host, port, why, addr)
		return
	}
	if err != nil {
		http.Error(w, "gemkit sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "gemkit sandbox proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	// A handler can still be here after Close (http.Server.Close does not
	// wait for handlers): under mu, either Close has not begun and the
	// tunnel is counted before Close's Wait, or it has and the tunnel is
	// not started at all.
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		upstream.Close()
		return
	}
	if p.tunnel == nil {
		p.tunnel = map[net.Conn]struct{}{}
	}
	p.tunnel[client], p.tunnel[upstream] = struct{}{}, struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		tunnel(client, buf.Reader, upstream, p.counted(upstream))
		p.mu.Lock()
		delete(p.tunnel, client)
		delete(p.tunnel, upstream)
		p.mu.Unlock()
	}()
}

// tunnel copies both ways until either side closes.
// from is what is read of upstream (upstream itself, or counted).
func tunnel(client net.Conn, pending *bufio.Reader, upstream net.Conn, from io.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, pending)
		if c, ok := upstream.(*net.TCPConn); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, from)
		if c, ok := client.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	upstream.Close()
}

// limitListener accepts at most n connections at once: Accept waits while
// n are open, so a tool that opens connections without end makes them
// wait in the listening socket's backlog (inside its own namespace), not
// in gemkit's descriptor table.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when the one beneath can, as a
// tunnel does when the server has finished.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
