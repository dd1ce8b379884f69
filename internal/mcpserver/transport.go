package mcpserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// ServeStdio serves one client on in and out (newline-delimited JSON-RPC)
// until in ends or ctx is cancelled, watching for extension changes
// meanwhile. Calls still running when the client goes away are cancelled,
// which kills their tools.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	if s.cfg.Servers != nil {
		// Beside the client's initialize, which it would hold up: a
		// client's first list that comes before it is done waits for
		// it, server by server.
		go s.cfg.Servers.Prepare()
	}
	in, restore := pollable(in)
	defer restore()
	out, restoreOut := pollableWriter(out)
	defer restoreOut()
	r := &listingReader{s: s, src: bufio.NewReaderSize(in, 64<<10)}
	w := &lockedWriter{w: out, order: &r.order}
	r.out = w
	// The SDK handles the session's requests under ctx: the handshake
	// tells the reader through it when initialize was answered.
	ctx = context.WithValue(ctx, stdioOrderKey{}, &r.order)
	r.ctx = ctx
	// The calls forwarded to the extensions' servers end with the
	// session, as the SDK's end with its context.
	context.AfterFunc(ctx, r.calls.cancelAll)
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Path is the Streamable HTTP endpoint's path.
const Path = "/mcp"

// MaxRequestBody bounds an HTTP request's body: mcpwire's bound.
const MaxRequestBody = mcpwire.MaxRequestBody

// NewToken returns a random bearer token (32 bytes, hex).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// MinTokenLen is the shortest bearer token accepted.
const MinTokenLen = 16

// TokenFile returns the bearer token kept in path, making a random one
// there first (mode 0600, in a 0700 folder) when the file does not exist,
// so that a server started again takes the same token and a client set up
// once keeps working. The file appears whole or not at all: it is linked
// into place from a written temporary file, which also keeps two servers
// starting at once from making two tokens. A file that others may read, or
// that holds less than MinTokenLen characters, is refused.
func TokenFile(path string) (token string, created bool, err error) {
	if token, err := readTokenFile(path); !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	if token, err = NewToken(); err != nil {
		return "", false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(token + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, err
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		token, err := readTokenFile(path) // another server made it first
		return token, false, err
	} else if err != nil {
		return "", false, err
	}
	return token, true, nil
}

func readTokenFile(path string) (string, error) {
	f, err := fsutil.OpenRegular(path)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return "", fmt.Errorf("the token file %s is not a regular file", path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	// Windows reports every file as 0666 (its access lists are not mode
	// bits), so the check would refuse every token file there.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the token file %s may be read by others (mode %v): chmod 600 it, or remove it to make a new token", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if len(token) < MinTokenLen {
		return "", fmt.Errorf("the token file %s holds less than %d characters: remove it to make a new token", path, MinTokenLen)
	}
	return token, nil
}

// ServeHTTP serves Streamable HTTP at Path on ln (from httpguard.Listen)
// until ctx is cancelled, behind httpguard's guard: every request must
// carry "Authorization: Bearer TOKEN", a Host naming the listening address
// (or localhost with its port), and no Origin header (no browser may call
// it); any other path is not found, token or not.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, token string) error {
	if len(token) < MinTokenLen {
		return errors.New("mcpserver: the bearer token must be at least 16 characters")
	}
	limits := s.cfg.HTTPLimits
	limits.MaxBody = MaxRequestBody
	guard, err := httpguard.New(ln, httpguard.Config{
		Credential: "Bearer " + token,
		// Only Path is served. Anything else is not found, token or not:
		// a client looking for OAuth metadata (RFC 9728's
		// /.well-known/oauth-protected-resource) learns there is none
		// instead of being told to authenticate for it.
		Paths:  []string{Path},
		Limits: limits,
		Wording: httpguard.Wording{
			FromSandbox: "request refused: it came through an extension tool's sandbox, which may not reach gemkit mcp",
			Origin:      "requests with an Origin header are refused",
			Host:        "invalid Host header",
			NotFound:    "not found: the MCP endpoint is " + Path,
			Credential:  unauthorized,
			// RFC 9110 §11.6.1: a 401 carries a challenge. Saying what is
			// wrong keeps a client from starting an OAuth flow this server
			// does not offer (the MCP Inspector does, without it).
			Challenge: `Bearer error="invalid_token", error_description="` + unauthorized + `"`,
		},
	})
	if err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	go s.sweepSessions(ctx)
	srv := guard.Server(s.streamable())
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(sctx)
		srv.Close()
	}()
	err = srv.Serve(guard.Listener())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// sessionIdle is how long a session of the revisions up to 2025-11-25
// lives without a request: the real clients never send DELETE.
const sessionIdle = 10 * time.Minute

// streamable is the Streamable HTTP handler of both eras on one endpoint.
// The SDK serves the revisions up to 2025-11-25 with sessions and
// 2026-07-28 only without (a request stands alone there): a request that
// names a revision from 2026-07-28 on in its Mcp-Protocol-Version header
// and belongs to no session goes to a stateless handler, every other to
// the one with sessions, whose requests count as its activity
// (sweepSessions). Both check Host and Origin in the guard (HTTPHandler),
// not themselves.
func (s *Server) streamable() http.Handler {
	get := func(*http.Request) *mcp.Server { return s.mcp }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		DisableLocalhostProtection: true,
		Logger:                     sdkLogger(s.log),
		// Every event is kept (within the store's bound, 10 MiB, oldest
		// first out) and has an id, so that a client whose stream broke
		// while a tool ran gets its result on the stream it opens with
		// Last-Event-ID, as the SDKs do: without it the answer was written
		// to no one, and the call waited until the client's timeout.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		DisableLocalhostProtection: true,
		Logger:                     sdkLogger(s.log),
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		if v := r.Header.Get("Mcp-Protocol-Version"); mcpwire.IsStateless(v) && id == "" {
			stateless.ServeHTTP(w, r)
			return
		}
		if id != "" {
			s.active.begin(id)
			defer s.active.end(id)
		}
		stateful.ServeHTTP(w, r)
	})
}

// sessionActivity is what sweepSessions knows of each HTTP session: the
// requests it has open (its GET event stream among them) and when one
// last began or ended. The SDK's own idle timeout counts POSTs only, so a
// client that listens on its event stream for list_changed and sends
// nothing for a while would lose its session; and the real clients never
// send DELETE, so a session whose client went away must be swept.
type sessionActivity struct {
	mu   sync.Mutex
	byID map[string]*activity
}

type activity struct {
	open int
	last time.Time
}

func (a *sessionActivity) get(id string, now time.Time) *activity {
	if a.byID == nil {
		a.byID = map[string]*activity{}
	}
	act := a.byID[id]
	if act == nil {
		act = &activity{last: now}
		a.byID[id] = act
	}
	return act
}

func (a *sessionActivity) begin(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	act := a.get(id, time.Now())
	act.open++
	act.last = time.Now()
}

func (a *sessionActivity) end(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	act := a.get(id, time.Now())
	act.open--
	act.last = time.Now()
}

// sweepSessions closes, every minute until ctx ends, the HTTP sessions
// idle for sessionIdle.
func (s *Server) sweepSessions(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sweep(now, sessionIdle)
		}
	}
}

// sweep closes the HTTP sessions that have had no request open for idle
// at now; a session first seen here counts as active now.
func (s *Server) sweep(now time.Time, idle time.Duration) {
	live := map[string]bool{}
	var stale []*mcp.ServerSession
	s.active.mu.Lock()
	for ss := range s.mcp.Sessions() {
		id := ss.ID()
		if id == "" { // stdio, or a request of 2026-07-28
			continue
		}
		live[id] = true
		if act := s.active.get(id, now); act.open <= 0 && now.Sub(act.last) >= idle {
			stale = append(stale, ss)
			delete(s.active.byID, id)
		}
	}
	for id := range s.active.byID {
		if !live[id] {
			delete(s.active.byID, id)
		}
	}
	s.active.mu.Unlock()
	for _, ss := range stale {
		s.log.Debug("closing an idle MCP session", "session", ss.ID())
		ss.Close()
	}
}

// unauthorized is the 401's message, in the body and in its challenge.
const unauthorized = "missing or wrong bearer token: send Authorization: Bearer TOKEN with the token of gemkit mcp --http (in its token file, or $GEMKIT_MCP_TOKEN)"
