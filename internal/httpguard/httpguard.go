// Package httpguard is what every gemkit HTTP server on loopback does before
// a route sees a request: the IDE companion (/mcp, /stream, /lsp, ...),
// its Claude Code endpoint and `gemkit mcp --http`. Anyone on the machine
// can connect to a loopback port, a browser can be made to, and an
// extension tool allowed "localhost" reaches it through the sandbox's
// proxy; so a server listens on IPv4 loopback only ([Listen]) and its
// [Guard] refuses, in this order:
//
//   - a connection from the sandbox proxy's own address
//     (permission.ProxySource), token or not: a tool that somehow learnt a
//     token must still not use it;
//   - a request with an Origin header: only a browser sends one;
//   - a Host other than the listening address or localhost with its port
//     (DNS rebinding);
//   - when [Config].Paths is set, a path outside it (404, before the token
//     is looked at, so that a client looking for OAuth metadata is not told
//     to authenticate for it);
//   - a credential header other than [Config].Credential, compared in
//     constant time;
//   - a body announced larger than [Limits].MaxBody (a body that turns out
//     larger is cut there: the route sees *http.MaxBytesError).
//
// A refused request's body is never read and its connection is closed. The
// server it makes ([Guard.Server]) bounds the time to send a request's
// headers from its first byte, and the wait for a connection's first (or
// next) request; an authorised request's body must arrive within
// [Limits].BodyTimeout; and at most
// [Limits].MaxUnauthenticated connections that have not yet carried an
// authorised request are kept, the oldest closed first, so that a local
// flood of slow connections cannot keep the real client out.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// Limits bound what a client may hold of a guarded server. Zero fields
// take the defaults.
type Limits struct {
	// MaxBody bounds a request's body; default 10 MiB.
	MaxBody int64
	// MaxUnauthenticated is how many connections that have carried no
	// authorised request are kept at once; past it the oldest is closed.
	// Default DefaultMaxUnauthenticated, lowered to a quarter of the
	// process's file-descriptor limit when that is smaller.
	MaxUnauthenticated int
	// HeaderTimeout bounds sending a request's headers, counted from the
	// request's first byte (for a connection's first request too: a client
	// slow to write it is not cut off, listener.go); default 5 s.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading an authorised request's body; default
	// 30 s (10 MiB over loopback takes milliseconds).
	BodyTimeout time.Duration
	// IdleTimeout bounds how long a connection waits for its first or next
	// request (its first byte); default 2 minutes.
	IdleTimeout time.Duration
}

// The defaults of Limits.
const (
	DefaultMaxBody            = 10 << 20
	DefaultMaxUnauthenticated = 256
	DefaultHeaderTimeout      = 5 * time.Second
	DefaultBodyTimeout        = 30 * time.Second
	DefaultIdleTimeout        = 2 * time.Minute
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.MaxUnauthenticated <= 0 {
		l.MaxUnauthenticated = MaxUnauthenticated()
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

// MaxUnauthenticated is the default bound on unauthenticated connections
// in this process: DefaultMaxUnauthenticated, or a quarter of the
// file-descriptor limit when that is smaller (but never under 8).
func MaxUnauthenticated() int {
	if fds := openFileLimit(); fds > 0 && fds/4 < DefaultMaxUnauthenticated {
		return max(fds/4, 8)
	}
	return DefaultMaxUnauthenticated
}

// Reason is why the guard refused a request.
type Reason int

const (
	FromSandbox Reason = iota // came through an extension tool's sandbox proxy
	Origin                    // carried an Origin header
	Host                      // named a foreign Host
	NotFound                  // asked for a path outside Config.Paths
	Credential                // lacked the credential, or carried a wrong one
	TooLarge                  // announced a body over Limits.MaxBody
)

// Status is the HTTP status a refusal for r gets.
func (r Reason) Status() int {
	switch r {
	case NotFound:
		return http.StatusNotFound
	case Credential:
		return http.StatusUnauthorized
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusForbidden
	}
}

// Wording is what a refusal says, as {"error": "..."}: each server keeps
// the words its clients have always seen. An empty field takes the
// default.
type Wording struct {
	FromSandbox, Origin, Host, NotFound, Credential string
	// Challenge, when set, is the WWW-Authenticate header of a 401.
	Challenge string
}

func (w Wording) say(r Reason, maxBody int64) string {
	pick := func(s, def string) string {
		if s != "" {
			return s
		}
		return def
	}
	switch r {
	case FromSandbox:
		return pick(w.FromSandbox, "request refused: it came through an extension tool's sandbox, which may not reach this server")
	case Origin:
		return pick(w.Origin, "request refused: requests with an Origin header are not allowed")
	case Host:
		return pick(w.Host, "request refused: invalid Host header")
	case NotFound:
		return pick(w.NotFound, "not found")
	case Credential:
		return pick(w.Credential, "unauthorized: missing or wrong bearer token")
	default:
		return fmt.Sprintf("request body larger than %d bytes", maxBody)
	}
}

// Config is what one guarded server accepts.
type Config struct {
	// Hosts are the Host header values accepted; default Hosts of the
	// listener's address.
	Hosts []string
	// Header names the header that carries the credential; default
	// Authorization.
	Header string
	// Credential is the exact value Header must have, such as
	// "Bearer <token>". It must not be empty.
	Credential string
	// Paths, when set, are the only paths served: any other is answered
	// 404 before the credential is looked at.
	Paths []string
	Limits
	Wording
	// ErrorLog receives net/http's own errors (a TLS handshake sent to
	// this plain port, a request it cannot parse); default: dropped.
	ErrorLog *log.Logger
}

// Guard checks the requests of one server and bounds its connections.
type Guard struct {
	cfg  Config
	want [32]byte // sha256 of cfg.Credential
	ln   *listener
}

// New guards the connections of ln, which should come from [Listen].
func New(ln net.Listener, cfg Config) (*Guard, error) {
	if cfg.Credential == "" {
		return nil, errors.New("httpguard: no credential to check")
	}
	if cfg.Header == "" {
		cfg.Header = "Authorization"
	}
	if cfg.Hosts == nil {
		cfg.Hosts = Hosts(ln.Addr())
	}
	cfg.Limits = cfg.Limits.withDefaults()
	return &Guard{
		cfg:  cfg,
		want: sha256.Sum256([]byte(cfg.Credential)),
		ln:   newListener(ln, cfg.Limits),
	}, nil
}

// Listener is the guarded listener to serve on: it keeps the bound on
// unauthenticated connections.
func (g *Guard) Listener() net.Listener { return g.ln }

// Unauthenticated is how many connections have not yet carried an
// authorised request.
func (g *Guard) Unauthenticated() int { return g.ln.unauthenticated() }

// Server is an http.Server serving h behind the guard, with its timeouts;
// serve it on [Guard.Listener].
func (g *Guard) Server(h http.Handler) *http.Server {
	errLog := g.cfg.ErrorLog
	if errLog == nil {
		errLog = log.New(discard{}, "", 0)
	}
	return &http.Server{
		Handler:           g.Handler(h),
		ReadHeaderTimeout: g.cfg.HeaderTimeout,
		IdleTimeout:       g.cfg.IdleTimeout,
		ConnContext:       connContext,
		ErrorLog:          errLog,
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Handler is next behind the guard's checks. Served on a [Guard.Listener]
// through [Guard.Server], an authorised request also takes its connection
// out of the bound on unauthenticated ones.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why, refused := g.check(r); refused {
			g.refuse(w, why)
			return
		}
		if c := connOf(r); c != nil {
			c.authorised()
		}
		rc := http.NewResponseController(w)
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			_ = rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout))
			r.Body = &deadlineBody{body: r.Body, rc: rc}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, g.cfg.MaxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// check says why r is refused, in the order of the package's doc.
func (g *Guard) check(r *http.Request) (Reason, bool) {
	switch {
	case permission.FromSandbox(r.RemoteAddr):
		return FromSandbox, true
	case r.Header["Origin"] != nil:
		return Origin, true
	case !slices.Contains(g.cfg.Hosts, r.Host):
		return Host, true
	case g.cfg.Paths != nil && !slices.Contains(g.cfg.Paths, r.URL.Path):
		return NotFound, true
	case !g.authorised(r.Header.Get(g.cfg.Header)):
		return Credential, true
	case r.ContentLength > g.cfg.MaxBody:
		return TooLarge, true
	}
	return 0, false
}

// authorised compares v with the credential in constant time: both are
// hashed first, so that their lengths do not show either.
func (g *Guard) authorised(v string) bool {
	got := sha256.Sum256([]byte(v))
	return subtle.ConstantTimeCompare(got[:], g.want[:]) == 1
}

// refuse answers a refused request and drops its connection without
// reading the body: a refused client's body is never worth the wait, and
// one that trickles it must not hold the connection.
func (g *Guard) refuse(w http.ResponseWriter, why Reason) {
	h := w.Header()
	h.Set("Connection", "close")
	if why == Credential && g.cfg.Challenge != "" {
		h.Set("WWW-Authenticate", g.cfg.Challenge)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	WriteError(w, why.Status(), g.cfg.say(why, g.cfg.MaxBody))
}

// WriteError answers {"error": msg} with status: the shape of every
// refusal, for a server's own routes too.
func WriteError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// deadlineBody clears the read deadline the guard set once the body has
// been read to its end, so that a long-running handler (an event stream, a
// tool call waiting for the editor) is not cut when it runs out. A body
// that fails (it ran out) keeps the deadline: net/http's reading of the
// rest, to keep the connection, must fail too, not wait for a trickle.
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
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.body.Close() }
