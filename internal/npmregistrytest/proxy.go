package npmregistrytest

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Proxy is an HTTP proxy on 127.0.0.1 as a company's network has one:
// the only way to the hosts it knows (Route), which no resolver knows,
// asking for credentials when it was given some. It tunnels CONNECT
// and forwards absolute-form requests, and records what it was asked.
type Proxy struct {
	// URL is the proxy's URL, with its credentials when it asks for
	// some: http://user:password@127.0.0.1:port.
	URL string

	t       TB
	ln      net.Listener
	user    string
	pass    string
	mu      sync.Mutex
	routes  map[string]string
	asked   []string
	refused []string
	open    map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// NewProxy starts a proxy for the test t, closed when it ends; user and
// password, when not "", are the credentials it asks for
// (Proxy-Authorization: Basic), answering 407 without them.
func NewProxy(t TB, user, password string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("npmregistrytest: %v", err)
	}
	p := &Proxy{t: t, ln: ln, user: user, pass: password, routes: map[string]string{}}
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	p.URL = u.String()
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		p.mu.Lock()
		for c := range p.open {
			c.Close()
		}
		p.closed = true
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Route makes the proxy reach host (host:port, as a client asks for
// it) at addr.
func (p *Proxy) Route(host, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[strings.ToLower(host)] = addr
}

// Asked are the hosts (host:port) the proxy was asked for and let
// through, in order; Refused those it refused (unknown, or without the
// credentials).
func (p *Proxy) Asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		target = r.URL.Host
		if r.URL.Port() == "" {
			target += ":80"
		}
	}
	p.mu.Lock()
	addr, known := p.routes[strings.ToLower(target)]
	authorized := p.user == "" || r.Header.Get("Proxy-Authorization") == "Basic "+base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.pass))
	if known && authorized {
		p.asked = append(p.asked, target)
	} else {
		p.refused = append(p.refused, target)
	}
	p.mu.Unlock()
	switch {
	case !authorized:
		w.Header().Set("Proxy-Authenticate", `Basic realm="npmregistrytest"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	case !known:
		http.Error(w, "no route to "+target, http.StatusForbidden)
		return
	case r.Method == http.MethodConnect:
		p.tunnel(w, addr)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// tunnel answers a CONNECT with a tunnel to addr.
func (p *Proxy) tunnel(w http.ResponseWriter, addr string) {
	up, err := net.Dial("tcp", addr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	if p.open == nil {
		p.open = map[net.Conn]struct{}{}
	}
	p.open[c], p.open[up] = struct{}{}, struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	c.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	go func() {
		defer p.wg.Done()
		pipe(c, buf.Reader, up)
		p.mu.Lock()
		delete(p.open, c)
		delete(p.open, up)
		p.mu.Unlock()
	}()
}

// pipe copies both ways until either side ends, then closes both.
func pipe(c net.Conn, pending *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, pending); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}
