package mcpserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one client on in and out (newline-delimited JSON-RPC)
// until in ends or ctx is cancelled, watching for extension changes
// meanwhile. Calls still running when the client goes away are cancelled,
// which kills their tools.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	ss := server.NewStdioServer(s.mcp)
	ss.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	w := &lockedWriter{w: out}
	err := ss.Listen(ctx, &listingReader{s: s, src: bufio.NewReaderSize(in, 64<<10), out: w}, w)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Path is the Streamable HTTP endpoint's path.
const Path = "/mcp"

// MaxRequestBody bounds an HTTP request's body.
const MaxRequestBody = 4 << 20

// NewToken returns a random bearer token (32 bytes, hex).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// ListenLoopback listens on addr, which must be a loopback address
// (127.0.0.0/8 or ::1) with a port, 0 for any free one.
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not a loopback address: gemkit mcp serves this machine only (use 127.0.0.1:PORT)", addr)
	}
	return net.Listen("tcp", addr)
}

// ServeHTTP serves Streamable HTTP at Path on ln until ctx is cancelled.
// Every request must carry "Authorization: Bearer TOKEN", a Host naming
// the listening address (or localhost with its port), and no Origin
// header (no browser may call it).
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, token string) error {
	if len(token) < 16 {
		return errors.New("mcpserver: the bearer token must be at least 16 characters")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	srv := &http.Server{
		Handler:           s.HTTPHandler(token, AllowedHosts(ln.Addr())),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(sctx)
		srv.Close()
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// AllowedHosts are the Host header values a client on addr may send.
func AllowedHosts(addr net.Addr) []string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{addr.String()}
	}
	port := strconv.Itoa(ta.Port)
	return []string{net.JoinHostPort(ta.IP.String(), port), net.JoinHostPort("localhost", port)}
}

// HTTPHandler is the guarded Streamable HTTP handler, for ServeHTTP and
// tests.
func (s *Server) HTTPHandler(token string, hosts []string) http.Handler {
	mcpHTTP := server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath(Path),
		server.WithStateful(true),
		// The real clients never send DELETE; a heartbeat keeps live
		// sessions fresh so the idle TTL sweeps only dead ones.
		server.WithHeartbeatInterval(15*time.Second),
		server.WithSessionIdleTTL(10*time.Minute),
		// The guard below checks Host exactly; mcp-go's own check is looser.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(s.log),
	)
	want := sha256.Sum256([]byte("Bearer " + token))
	mux := http.NewServeMux()
	mux.Handle(Path, mcpHTTP)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			httpError(w, http.StatusForbidden, "requests with an Origin header are refused")
			return
		}
		hostOK := false
		for _, h := range hosts {
			if r.Host == h {
				hostOK = true
			}
		}
		if !hostOK {
			httpError(w, http.StatusForbidden, "invalid Host header")
			return
		}
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			httpError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		if r.ContentLength > MaxRequestBody {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", MaxRequestBody))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)
		}
		mux.ServeHTTP(w, r)
	})
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
