package companion

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds on connections that have not yet shown the bearer token. Anyone
// on the machine can open connections to a loopback port; without these a
// flood of slow requests holds every file descriptor and the CLI's own
// request is never read.
const (
	// DefaultMaxUnauthenticated is how many connections that have sent no
	// authorised request are kept at once; past it the oldest is closed.
	DefaultMaxUnauthenticated = 256
	// bodyReadTimeout bounds reading an authorised request's body: 10 MiB
	// over loopback takes milliseconds.
	bodyReadTimeout = 30 * time.Second
)

// guardedListener tracks the connections that have not yet carried an
// authorised request. When there are more than max of them it closes the
// oldest, so a new connection (the CLI's, say) always gets in and is read:
// an attacker can only push out connections older than its own newest.
type guardedListener struct {
	net.Listener
	max int

	mu      sync.Mutex
	pending *list.List // of *guardedConn, oldest first
}

func newGuardedListener(ln net.Listener, max int) *guardedListener {
	return &guardedListener{Listener: ln, max: max, pending: list.New()}
}

func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &guardedConn{Conn: c, ln: l}
	var evict *guardedConn
	l.mu.Lock()
	gc.elem = l.pending.PushBack(gc)
	if l.pending.Len() > l.max {
		evict = l.pending.Remove(l.pending.Front()).(*guardedConn)
		evict.elem = nil
	}
	l.mu.Unlock()
	if evict != nil {
		evict.Conn.Close()
	}
	return gc, nil
}

// unauthenticated is how many connections have not yet been authorised.
func (l *guardedListener) unauthenticated() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.Len()
}

// guardedConn is a connection of a guardedListener.
type guardedConn struct {
	net.Conn
	ln   *guardedListener
	elem *list.Element // in ln.pending while not authorised; guarded by ln.mu
}

// authorised takes the connection out of the bound: it has carried a
// request with the right token.
func (c *guardedConn) authorised() {
	c.ln.mu.Lock()
	if c.elem != nil {
		c.ln.pending.Remove(c.elem)
		c.elem = nil
	}
	c.ln.mu.Unlock()
}

func (c *guardedConn) Close() error {
	c.authorised() // leaves the list either way
	return c.Conn.Close()
}

type connKey struct{}

// connContext lets the guard find the connection a request came on.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connOf(r *http.Request) *guardedConn {
	c, _ := r.Context().Value(connKey{}).(*guardedConn)
	return c
}

// refuse answers a request that failed the guard and drops its
// connection without reading the body: a refused client's body is never
// worth the wait, and one that trickles it must not hold the connection.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	writeJSONError(w, status, msg)
}

// deadlineBody clears the read deadline the guard set once the body has
// been read to its end, so that a long-running handler (an event stream, a
// tool call waiting for the editor) is not cut when it runs out.
type deadlineBody struct {
	body interface {
		Read([]byte) (int, error)
		Close() error
	}
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.body.Close() }
