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
	p, err := spawnStdio(cmd)
	if err != nil {
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	life, cancel := context.WithCancel(context.Background())
	var once sync.Once
	c.onClose = func() {
		once.Do(func() {
			cancel()
			_ = stdin.Close()
			select {
			case <-p.exited:
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
				<-p.exited
			}
			_ = proc.KillGroup(cmd)
			_ = p.stdout.Close()
		})
	}
	// The companion's exit ends the initialize too: its stdout then
	// ends once what it wrote is read, even while a child of it holds
	// the pipe. Where the exit cannot end a read, it ends the
	// initialize's context, and an answer still in the pipe is lost.
	sctx, stop := context.WithCancel(ctx)
	if !exitEndsReads {
		go func() {
			select {
			case <-p.exited:
				stop()
			case <-sctx.Done():
			}
		}()
	}
	err = c.start(sctx, o, func(ctx context.Context, mo mcpclient.Options) (*mcpclient.Client, error) {
		return mcpclient.Stdio(ctx, p.stdout, stdin, mo)
	})
	stop()
	if err != nil {
		// A companion that dies at start shows first as a closed
		// transport, or as its answer to initialize; its exit status
		// says more.
		exited := false
		select {
		case <-p.exited:
			exited = true
		case <-time.After(500 * time.Millisecond):
		}
		c.setState(Disconnected, "")
		c.onClose()
		<-p.stderrRead
		return nil, startFailure(err, exited, p.waitErr, p.tail.String())
	}
	go func() {
		select {
		case <-p.exited:
			c.lost(fmt.Errorf("the stdio companion exited: %v", p.waitErr))
		case <-life.Done():
		}
	}()
	return c, nil
}

// startedCompanion is a stdio companion that runs, and what of it is
// still to come.
type startedCompanion struct {
	stdout *exitPipe
	tail   *stderrTail
	// stderrRead is closed once stderr is read to its end: the
	// companion's exit bounds it.
	stderrRead chan struct{}
	// exited is closed when the companion has exited, with waitErr.
	exited  chan struct{}
	waitErr error
}

// spawnStdio starts cmd (its stdin already piped), owned
// (proc.StartOwned: it ends with this process, and closing the client
// ends what it started too), with its stdout and stderr read until its
// exit: a child of it that holds them does not hold the client.
func spawnStdio(cmd *exec.Cmd) (*startedCompanion, error) {
	stdout, outW, err := newExitPipe()
	if err != nil {
		return nil, err
	}
	stderr, errW, err := newExitPipe()
	if err != nil {
		stdout.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = proc.StartOwned(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		return nil, err
	}
	p := &startedCompanion{stdout: stdout, tail: &stderrTail{}, stderrRead: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		_, _ = io.Copy(p.tail, stderr)
		stderr.Close()
		close(p.stderrRead)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		stdout.companionExited()
		stderr.companionExited()
		close(p.exited)
	}()
	return p, nil
}

// startFailure is why a stdio companion's start failed: err, or when the
// companion exited, its exit status and its answer to initialize if it
// gave one (gemkit ide bridge says there why it cannot relay); then the
// tail of its stderr.
func startFailure(err error, exited bool, waitErr error, stderr string) *DialError {
	kind := "protocol"
	if exited {
		if msg, ok := mcpclient.Refusal(err); ok {
			err = fmt.Errorf("companion exited: %w; its answer to initialize: %s", waitErr, msg)
		} else {
			err = fmt.Errorf("companion exited: %w", waitErr)
		}
		kind = "spawn"
	}
	if stderr != "" {
		err = fmt.Errorf("%w (stderr: %s)", err, stderr)
	}
	return &DialError{Kind: kind, Err: err}
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
