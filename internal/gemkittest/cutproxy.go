package gemkittest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// CutProxy stands between a client and an HTTP server on loopback, as a
// network that may drop connections: it passes each connection to the
// server, rewriting the Host the client names (the proxy's port) to the
// server's, which the servers' guard checks, and Cut closes both ends of
// the connections whose latest request matches.
type CutProxy struct {
	// Port is the proxy's port on 127.0.0.1.
	Port int

	mu    sync.Mutex
	conns map[*proxied]struct{}
}

// proxied is one connection through the proxy: both its ends, and the
// start of the latest request the client sent on it.
type proxied struct {
	client, server net.Conn
	latest         []byte
}

// NewCutProxy listens on 127.0.0.1 for the length of the test and passes
// each connection to the server on 127.0.0.1:port.
func NewCutProxy(t testing.TB, port int) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &CutProxy{Port: ln.Addr().(*net.TCPAddr).Port, conns: map[*proxied]struct{}{}}
	from, to := fmt.Appendf(nil, "127.0.0.1:%d", p.Port), fmt.Appendf(nil, "127.0.0.1:%d", port)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pass(c, port, from, to)
		}
	}()
	return p
}

func (p *CutProxy) pass(c net.Conn, port int, from, to []byte) {
	defer c.Close()
	up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return
	}
	defer up.Close()
	pc := &proxied{client: c, server: up}
	p.mu.Lock()
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()
	go func() {
		_, _ = io.Copy(c, up)
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			// A request starts with its method; what follows on the
			// same request (its body) is added to it.
			p.mu.Lock()
			if isRequestStart(buf[:n]) {
				pc.latest = nil
			}
			pc.latest = append(pc.latest, buf[:n]...)
			p.mu.Unlock()
			if _, werr := up.Write(bytes.ReplaceAll(buf[:n], from, to)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func isRequestStart(b []byte) bool {
	for _, m := range []string{"GET ", "POST ", "DELETE ", "PUT ", "HEAD ", "OPTIONS "} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

// Cut closes both ends of every connection whose latest request (its
// request line, headers and as much of its body as has come) matches,
// and says how many it closed. The server's end sees the close before
// Cut returns.
func (p *CutProxy) Cut(match func(request []byte) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pc := range p.conns {
		if match(pc.latest) {
			pc.client.Close()
			pc.server.Close()
			delete(p.conns, pc)
			n++
		}
	}
	return n
}
