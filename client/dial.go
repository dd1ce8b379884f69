package client

// Dialling one endpoint: Streamable HTTP or MCP stdio, and why a dial failed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/proc"
)

// DialError classifies why one endpoint failed, so that a person can act.
type DialError struct {
	// Kind is one of "bad-port", "no-host" (the host name does not
	// resolve), "refused" (nothing listens), "unauthorized" (token
	// refused), "forbidden" (Host/Origin refused), "http-status", "spawn",
	// "protocol" or "timeout".
	Kind   string
	Status int
	// Host is the host name that does not resolve, for "no-host".
	Host string
	Err  error
}

func (e *DialError) Error() string {
	switch e.Kind {
	case "bad-port":
		return "port is not between 1 and 65535"
	case "no-host":
		msg := "the host " + e.Host + " cannot be resolved"
		if e.Host == "host.docker.internal" {
			msg += " (the CLI dials it inside a container: a companion of this same container is reached through its discovery file's stdio command when it names one, as gemkit's does, or directly with REMOTE_CONTAINERS=true (or =1) in the CLI's environment)"
		}
		return msg
	case "refused":
		return "nothing listens on the port (connection refused)"
	case "unauthorized":
		return "the companion refused the token (401)"
	case "forbidden":
		return "the companion refused the request (403: Host or Origin check)"
	case "http-status":
		return fmt.Sprintf("the companion answered HTTP %d: %v", e.Status, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Kind, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// Dial connects to one endpoint.
func Dial(ctx context.Context, ep Endpoint, o Options) (*Client, error) {
	o.defaults()
	if ep.Transport == TransportStdio {
		return dialStdio(ctx, ep, o)
	}
	return dialHTTP(ctx, ep, o)
}

// watchTransport observes the HTTP traffic of the MCP client: it remembers
// the last status (the SDK turns every 4xx at initialize into one error) and
// reports a failing or ending GET stream, which is how a companion going
// away shows.
type watchTransport struct {
	base       http.RoundTripper
	mu         sync.Mutex
	lastStatus int
	onLost     func(error)
	onNoStream func()
	addr       string
}

func (w *watchTransport) status() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastStatus
}

func (w *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil && w.onLost != nil && req.Method != http.MethodDelete {
			w.onLost(err)
		}
		return nil, err
	}
	w.mu.Lock()
	w.lastStatus = resp.StatusCode
	w.mu.Unlock()
	if req.Method != http.MethodGet {
		return resp, nil
	}
	switch {
	case resp.StatusCode == http.StatusMethodNotAllowed:
		if w.onNoStream != nil {
			w.onNoStream()
		}
	case resp.StatusCode != http.StatusOK:
		if w.onLost != nil {
			w.onLost(fmt.Errorf("the companion answered the GET stream with HTTP %d", resp.StatusCode))
		}
	default:
		resp.Body = &streamBody{ReadCloser: resp.Body, ctx: req.Context(), w: w}
	}
	return resp, nil
}

// streamBody notices the end of the GET stream. A companion may end it
// (the client then reopens it); when nothing listens on the port any more
// the companion is gone, and the client says so at once.
type streamBody struct {
	io.ReadCloser
	ctx  context.Context
	w    *watchTransport
	once sync.Once
	end  error // the stream's end, held back while its last bytes are read
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.end != nil {
		b.ended()
		return 0, b.end
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && n > 0 {
		// The last bytes go up first: the event they end (the outcome
		// of a diff a stopping companion rejected) must be handled
		// before the loss is reported, which fails what still waits.
		b.end = err
		return n, nil
	}
	if err != nil {
		b.end = err
		b.ended()
	}
	return n, err
}

// ended, once the stream has ended, reports the companion lost when
// nothing listens on its port any more.
func (b *streamBody) ended() {
	if b.ctx.Err() != nil {
		return
	}
	b.once.Do(func() {
		conn, derr := net.DialTimeout("tcp", b.w.addr, time.Second)
		if derr != nil {
			if b.w.onLost != nil {
				b.w.onLost(fmt.Errorf("the companion closed its stream and no longer listens: %w", derr))
			}
			return
		}
		conn.Close()
	})
}

func dialHTTP(ctx context.Context, ep Endpoint, o Options) (*Client, error) {
	if ep.Port <= 0 || ep.Port > 65535 {
		return nil, &DialError{Kind: "bad-port", Err: fmt.Errorf("port %q", ep.PortText)}
	}
	if ep.Host == "" {
		ep.Host = "127.0.0.1"
	}
	c := newClient(ep, o)
	base := &http.Transport{
		// The real CLI bypasses proxies for the companion
		// (createProxyAwareFetch in gemini-cli 0.61.0
		// packages/core/src/ide/ide-connection-utils.ts).
		Proxy:           nil,
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:    4,
		IdleConnTimeout: 90 * time.Second,
	}
	wt := &watchTransport{base: base, addr: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))}
	header := http.Header{}
	if ep.Token != "" {
		header.Set("Authorization", "Bearer "+ep.Token)
	}
	c.onClose = func() { base.CloseIdleConnections() }
	connecting := true
	var connMu sync.Mutex
	wt.onLost = func(err error) {
		connMu.Lock()
		during := connecting
		connMu.Unlock()
		if !during {
			c.lost(err)
		}
	}
	wt.onNoStream = func() {
		c.mu.Lock()
		c.noStream = true
		c.mu.Unlock()
		c.log.Warn("the companion refuses the GET stream (405): no context or diff notifications will arrive")
	}
	hc := &http.Client{Transport: wt}
	err := c.start(ctx, o, func(ctx context.Context, mo mcpclient.Options) (*mcpclient.Client, error) {
		return mcpclient.HTTP(ctx, ep.URL(), hc, header, mo)
	})
	if err != nil {
		c.setState(Disconnected, "")
		c.onClose()
		return nil, classifyHTTP(err, wt.status())
	}
	connMu.Lock()
	connecting = false
	connMu.Unlock()
	return c, nil
}

func classifyHTTP(err error, status int) error {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return &DialError{Kind: "no-host", Host: dnsErr.Name, Err: err}
	case status == http.StatusUnauthorized:
		return &DialError{Kind: "unauthorized", Status: 401, Err: err}
	case status == http.StatusForbidden:
		return &DialError{Kind: "forbidden", Status: 403, Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &DialError{Kind: "refused", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &DialError{Kind: "timeout", Err: err}
	case status >= 300:
		return &DialError{Kind: "http-status", Status: status, Err: err}
	}
	return &DialError{Kind: "protocol", Err: err}
}

// stderrTail keeps the last few KiB a stdio companion wrote to stderr, to
// explain a failure.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if len(s.buf) > 4096 {
		s.buf = s.buf[len(s.buf)-4096:]
	}
	return len(p), nil
}

func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(bytes.TrimSpace(s.buf))
}

func dialStdio(ctx context.Context, ep Endpoint, o Options) (*Client, error) {
	c := newClient(ep, o)
	cmd := exec.Command(ep.Command, ep.Args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	tail := &stderrTail{}
	cmd.Stderr = tail
	// Wait would also wait for every child of the companion that holds
	// its stderr; the companion's own exit is what ends the connection.
	cmd.WaitDelay = 200 * time.Millisecond
	// Owned (proc.StartOwned): it ends with this process, and closing the
	// client ends what it started too.
	if err := proc.StartOwned(cmd); err != nil {
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	life, cancel := context.WithCancel(context.Background())
	var once sync.Once
	c.onClose = func() {
		once.Do(func() {
			cancel()
			_ = stdin.Close()
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			_ = proc.KillGroup(cmd)
		})
	}
	// The pipe may stay open after the companion exits (a child of it
	// holds it), so its exit ends the initialize too.
	sctx, stop := context.WithCancel(ctx)
	go func() {
		select {
		case <-exited:
			stop()
		case <-sctx.Done():
		}
	}()
	err = c.start(sctx, o, func(ctx context.Context, mo mcpclient.Options) (*mcpclient.Client, error) {
		return mcpclient.Stdio(ctx, stdout, stdin, mo)
	})
	stop()
	if err != nil {
		// A companion that dies at start shows first as a closed
		// transport; its exit status says more.
		kind := "protocol"
		select {
		case <-exited:
			kind, err = "spawn", fmt.Errorf("companion exited: %v", waitErr)
		case <-time.After(cmd.WaitDelay + 300*time.Millisecond):
		}
		c.setState(Disconnected, "")
		c.onClose()
		return nil, &DialError{Kind: kind, Err: fmt.Errorf("%w (stderr: %s)", err, tail.String())}
	}
	go func() {
		select {
		case <-exited:
			c.lost(fmt.Errorf("the stdio companion exited: %v", waitErr))
		case <-life.Done():
		}
	}()
	return c, nil
}

// demoted passes the SDK's log records on at debug level: what the SDK
// calls an error (a failed DELETE on close, a stream to reopen) is routine
// for a companion client, and the client reports what matters itself.
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(a []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(a)} }

func (d demoted) WithGroup(n string) slog.Handler { return demoted{d.h.WithGroup(n)} }
