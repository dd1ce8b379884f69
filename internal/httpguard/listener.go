package httpguard

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// Listen listens on addr, which must be an IPv4 loopback address
// (127.0.0.0/8) with a port, 0 for any free one. IPv6 loopback (::1) is
// refused: the sandbox proxy reaches it from ::1 itself, the one IPv6
// loopback address, where the guard could not tell a tool's connection
// from a client's; on 127.0.0.0/8 it comes from permission.ProxySource,
// which is refused as an address to listen on too.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is4() || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not an IPv4 loopback address: gemkit serves this machine only, on 127.0.0.0/8 (use 127.0.0.1:PORT)", addr)
	}
	if ip == permission.ProxySource {
		return nil, fmt.Errorf("listen address %q is the address extension tools' sandbox proxy connects from; use 127.0.0.1:PORT", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Hosts are the Host header values a client of a server on addr may
// send: the address itself and localhost with its port.
func Hosts(addr net.Addr) []string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{addr.String()}
	}
	port := strconv.Itoa(ta.Port)
	return []string{net.JoinHostPort(ta.IP.String(), port), net.JoinHostPort("localhost", port)}
}

// listener tracks the connections that have not yet carried an authorised
// request. When there are more than max of them it closes the oldest, so
// a new connection (the real client's, say) always gets in and is read:
// an attacker can only push out connections older than its own newest.
type listener struct {
	net.Listener
	max int
	// header and idle are Limits.HeaderTimeout and IdleTimeout (conn's
	// SetReadDeadline).
	header, idle time.Duration

	mu      sync.Mutex
	pending *list.List // of *conn, oldest first
}

func newListener(ln net.Listener, l Limits) *listener {
	return &listener{Listener: ln, max: l.MaxUnauthenticated, header: l.HeaderTimeout, idle: l.IdleTimeout, pending: list.New()}
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &conn{Conn: c, ln: l}
	var evict *conn
	l.mu.Lock()
	gc.elem = l.pending.PushBack(gc)
	if l.pending.Len() > l.max {
		evict = l.pending.Remove(l.pending.Front()).(*conn)
		evict.elem = nil
	}
	l.mu.Unlock()
	if evict != nil {
		evict.Conn.Close()
	}
	return gc, nil
}

func (l *listener) unauthenticated() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.Len()
}

// conn is a connection of a listener.
type conn struct {
	net.Conn
	ln   *listener
	elem *list.Element // in ln.pending while not authorised; guarded by ln.mu

	// started is set once the connection's first byte has been read; dmu
	// orders that with the server's read deadlines.
	started atomic.Bool
	dmu     sync.Mutex

	// sent counts the bytes written, for Delivery; final is what the
	// peer had acknowledged when the connection was closed (-1 until
	// then, or when that could not be told), after which the socket can
	// no longer be asked.
	sent   atomic.Int64
	closed atomic.Bool
	final  atomic.Int64
}

// Write counts what reaches the socket, for [Delivery].
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.sent.Add(int64(n))
	return n, err
}

// SetReadDeadline holds back the server's deadline until the connection's
// first byte has come. net/http starts the header timeout of a
// connection's first request at its accept (and of every later one at
// the request's first bytes): a client that connects and then writes its
// request late, as a real one starved of CPU does (Gemini CLI starting on
// a loaded machine: the kernel completes the connect at once, its event
// loop writes the tools/list seconds later), had its connection closed
// unanswered, and took the IDE for one without diffs. So the wait for the
// first byte is bounded by the idle timeout, as net/http bounds the wait
// for a later request, and the header timeout runs from that byte (Read):
// headers trickled after it are still cut off at the header timeout, and
// silent connections are bounded in number by the listener.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.started.Load() && !t.IsZero() {
		return c.Conn.SetReadDeadline(time.Now().Add(c.ln.idle))
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the write deadline as given and the read deadline as
// SetReadDeadline does.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// Read starts the header timeout at the connection's first byte.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.started.Load() {
		c.dmu.Lock()
		if !c.started.Load() {
			c.started.Store(true)
			_ = c.Conn.SetReadDeadline(time.Now().Add(c.ln.header))
		}
		c.dmu.Unlock()
	}
	return n, err
}

// authorised takes the connection out of the bound: it has carried a
// request with the right credential.
func (c *conn) authorised() {
	c.ln.mu.Lock()
	if c.elem != nil {
		c.ln.pending.Remove(c.elem)
		c.elem = nil
	}
	c.ln.mu.Unlock()
}

func (c *conn) Close() error {
	c.authorised() // leaves the list either way
	if !c.closed.Load() {
		acked, ok := c.ackedNow()
		if !ok {
			acked = -1
		}
		c.final.Store(acked)
		c.closed.Store(true)
	}
	return c.Conn.Close()
}

type connKey struct{}

// connContext lets the guard find the connection a request came on.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connOf(r *http.Request) *conn {
	c, _ := r.Context().Value(connKey{}).(*conn)
	return c
}
