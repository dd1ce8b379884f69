package netproxy

import (
	"net"
	"sync"
)

// ServeAtMost is Serve with at most n connections to the proxy open at
// once (limitListener): what a sandboxed tool can make gemkit hold.
func (p *Proxy) ServeAtMost(l net.Listener, n int) error {
	return p.Serve(limitListener(l, n))
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
