package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// Resolver resolves host names for the proxy. net.DefaultResolver is one;
// tests inject a map so that a name like allowed.test reaches a loopback
// server.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
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
	// servers (sandbox.Policy.OwnServer); such a port is refused on every address
	// of this machine, whatever the allowlist says.
	OwnServer func(port int) bool
	// Received, when set, counts the bytes the hosts send the tool
	// through the proxy as they arrive: what an install fetched so far.
	Received *atomic.Int64
	// Upstream, when set, says through which proxy of the person's an
	// allowed host is reached (upstream.go), nil for none: it is
	// asked only once the host passed the allowlist.
	Upstream func(host string, port int) *url.URL

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
	if u := p.upstreamFor(host, port); u != nil {
		tr = p.upstreamTransport(u)
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if why, addr, ok := refusal(err); ok {
		p.denyAddr(w, r.Method, host, port, why, addr)
		return
	}
	if ue := (*UpstreamError)(nil); errors.As(err, &ue) {
		p.denyUpstream(w, r.Method, host, port, ue)
		return
	}
	if err == nil && resp.StatusCode == http.StatusProxyAuthRequired && p.upstreamFor(host, port) != nil {
		resp.Body.Close()
		p.denyUpstream(w, r.Method, host, port, &UpstreamError{Proxy: Redacted(p.upstreamFor(host, port)), Status: resp.Status})
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
	var upstream net.Conn
	if u := p.upstreamFor(host, port); u != nil {
		upstream, err = p.connectThrough(ctx, u, host, port)
	} else {
		upstream, err = p.dial(ctx, host, port)
	}
	cancel()
	if why, addr, ok := refusal(err); ok {
		p.denyAddr(w, "CONNECT", host, port, why, addr)
		return
	}
	if ue := (*UpstreamError)(nil); errors.As(err, &ue) {
		p.denyUpstream(w, "CONNECT", host, port, ue)
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
		if c, ok := upstream.(interface{ CloseWrite() error }); ok {
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
