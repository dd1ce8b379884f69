package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/buildinfo"
)

// Endpoint is one way to reach a companion.
type Endpoint struct {
	// Transport is "http" or "stdio".
	Transport string `json:"transport"`
	// Source says where the endpoint came from: "file" or "env".
	Source string `json:"source"`
	// Host and Port locate an HTTP companion; Token is its bearer token
	// (never printed).
	Host  string `json:"host,omitempty"`
	Port  int    `json:"port,omitempty"`
	Token string `json:"-"`
	// PortText is the port as written, before validation.
	PortText string `json:"portText,omitempty"`
	// Command and Args start a stdio companion.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// URL is the MCP URL of an HTTP endpoint.
func (e Endpoint) URL() string {
	return "http://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) + ide.MCPPath
}

func (e Endpoint) String() string {
	if e.Transport == "stdio" {
		return fmt.Sprintf("stdio %s %v (%s)", e.Command, e.Args, e.Source)
	}
	return fmt.Sprintf("%s (%s)", e.URL(), e.Source)
}

// Options configure Discover, Connect and Dial. The zero value behaves like
// the real CLI (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts) started in this process's directory
// and environment.
type Options struct {
	// Cwd is the CLI's directory; "" means os.Getwd().
	Cwd string
	// Dir is the discovery directory; "" means discovery.Dir().
	Dir string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// LookupEnv tells an empty variable from an unset one, for the token
	// and workspace fallbacks; nil means os.LookupEnv when Getenv is nil,
	// else "set when not empty".
	LookupEnv func(string) (string, bool)
	// IDEPID skips the process-tree walk when > 0.
	IDEPID int
	// Lookup reads processes for the walk; nil means the platform's way.
	Lookup discovery.ProcessLookup
	// Host overrides the host HTTP endpoints are dialled on; "" means the
	// real CLI's rule (getIdeServerHost in ide-connection-utils.ts:
	// 127.0.0.1, or host.docker.internal inside a container that is neither
	// an SSH session nor a devcontainer).
	Host string
	// InContainer overrides the container check (/.dockerenv,
	// /run/.containerenv).
	InContainer func() bool
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
	// Agent is the CLI whose rules Discover and Connect follow: AgentGemini
	// (the default, "") or AgentQwen (Qwen Code's lock files, variables
	// and host rule; Dir is then its lock folder).
	Agent string
	// ClientName and ClientVersion are sent at initialize.
	ClientName, ClientVersion string
	// ProtocolVersion is the MCP protocol version asked for at initialize;
	// "" means the one the real CLI asks for (ide.ProtocolVersion, or
	// ide.QwenProtocolVersion for AgentQwen).
	ProtocolVersion string
	// OnState observes every state change from the first "connecting".
	OnState func(State)
	// Observe sees every notification as it arrives, before the client
	// acts on it (for checks and debugging).
	Observe func(method string, params json.RawMessage)
	// DiffTimeout bounds each diff, from openDiff to the answer; 0 means
	// ide.DiffTimeout (10 minutes), the real client's request timeout
	// (IDE_REQUEST_TIMEOUT_MS in gemini-cli 0.61.0
	// packages/core/src/ide/constants.ts).
	DiffTimeout time.Duration
}

func (o *Options) defaults() {
	if o.LookupEnv == nil {
		if o.Getenv == nil {
			o.LookupEnv = os.LookupEnv
		} else {
			getenv := o.Getenv
			o.LookupEnv = func(k string) (string, bool) { v := getenv(k); return v, v != "" }
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	if o.ClientName == "" {
		o.ClientName = "gemkit-ide-client"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = buildinfo.Version()
	}
	if o.InContainer == nil {
		o.InContainer = inContainer
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = ide.ProtocolVersion
		if o.Agent == AgentQwen {
			o.ProtocolVersion = ide.QwenProtocolVersion
		}
	}
}

func inContainer() bool {
	for _, p := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// ServerHost is the host the real CLI dials for an HTTP companion
// (getIdeServerHost in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func ServerHost(getenv func(string) string, container bool) string {
	if container && getenv("SSH_CONNECTION") == "" && getenv("VSCODE_REMOTE_CONTAINERS_SESSION") == "" && getenv("REMOTE_CONTAINERS") == "" {
		return "host.docker.internal"
	}
	return "127.0.0.1"
}

// Plan is everything the real CLI decides before it dials (IdeClient.connect
// in gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts): the editor
// process, the discovery file, which editor it believes it runs in, the token
// and workspace with their sources, the workspace verdict and the endpoints
// in the order they are tried.
type Plan struct {
	// Agent is the CLI whose rules made the plan (Options.Agent; "" is
	// Gemini CLI).
	Agent   string               `json:"agent,omitempty"`
	Process discovery.IDEProcess `json:"process"`
	// Choice is Gemini CLI's choice of a discovery file, QwenChoice Qwen
	// Code's of a lock file; one of them is set.
	Choice     *discovery.Choice     `json:"-"`
	QwenChoice *discovery.QwenChoice `json:"-"`
	// ChoiceErr is set when the discovery directory could not be read.
	ChoiceErr error             `json:"-"`
	Config    *discovery.Config `json:"-"`
	// IDE is nil when the real CLI would refuse (detectIde: no ideInfo and a
	// terminal it does not recognise).
	IDE             *ide.IDEInfo `json:"ide,omitempty"`
	AuthToken       string       `json:"-"`
	TokenSource     string       `json:"tokenSource,omitempty"`
	WorkspacePath   *string      `json:"workspacePath,omitempty"`
	WorkspaceSource string       `json:"workspaceSource,omitempty"`
	// Workspace is nil when the cwd is inside the workspace, else one of
	// discovery.ErrNoWorkspace, discovery.ErrEmptyWorkspace or a
	// *discovery.MismatchError.
	Workspace error      `json:"-"`
	Endpoints []Endpoint `json:"endpoints"`
	Cwd       string     `json:"cwd"`
}

// Discover makes the real CLI's decisions without connecting (the part of
// IdeClient.connect in gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts
// before it dials).
func Discover(ctx context.Context, o Options) (*Plan, error) {
	o.defaults()
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("discover: %w", err)
		}
		o.Cwd = wd
	}
	p := &Plan{Cwd: o.Cwd}
	if o.Agent == AgentQwen {
		return discoverQwen(ctx, o, p), nil
	}
	getenv := o.Getenv
	if o.IDEPID > 0 {
		pid := strconv.Itoa(o.IDEPID)
		getenv = func(k string) string {
			if k == ide.EnvPID {
				return pid
			}
			return o.Getenv(k)
		}
	}
	p.Process = discovery.FindIDEProcess(ctx, discovery.FindOptions{Getenv: getenv, Lookup: o.Lookup})
	p.Choice, p.ChoiceErr = discovery.Choose(discovery.ChooseOptions{Dir: o.Dir, IDEPID: p.Process.PID, Cwd: o.Cwd, Getenv: o.Getenv})
	if p.Choice != nil && p.Choice.Chosen != nil {
		p.Config = p.Choice.Chosen.Config
	}
	var fileInfo *ide.IDEInfo
	if p.Config != nil {
		fileInfo = p.Config.IDEInfo
	}
	p.IDE = DetectIDE(fileInfo, p.Process.Command, o.Getenv)

	if p.Config != nil && p.Config.AuthToken != nil {
		p.AuthToken, p.TokenSource = *p.Config.AuthToken, "file"
	} else if t, ok := o.LookupEnv(ide.EnvAuthToken); ok {
		p.AuthToken, p.TokenSource = t, "env"
	}
	if p.Config != nil && p.Config.WorkspacePath != nil {
		p.WorkspacePath, p.WorkspaceSource = p.Config.WorkspacePath, "file"
	} else if w, ok := o.LookupEnv(ide.EnvWorkspacePath); ok {
		p.WorkspacePath, p.WorkspaceSource = &w, "env"
	}
	p.Workspace = discovery.ValidateWorkspace(p.WorkspacePath, o.Cwd)

	host := o.Host
	if host == "" {
		host = ServerHost(o.Getenv, o.InContainer())
	}
	if c := p.Config; c != nil {
		if c.Port != 0 {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: "http", Source: "file", Host: host, Port: c.Port, PortText: c.PortText, Token: p.AuthToken})
		}
		if c.Stdio != nil {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: "stdio", Source: "file", Command: c.Stdio.Command, Args: c.Stdio.Args})
		}
	}
	if port := o.Getenv(ide.EnvServerPort); port != "" {
		n, _ := discovery.ParseJSInt(port)
		p.Endpoints = append(p.Endpoints, Endpoint{Transport: "http", Source: "env", Host: host, Port: n, PortText: port, Token: p.AuthToken})
	}
	if cmd := o.Getenv(ide.EnvServerStdioCmd); cmd != "" {
		ep := Endpoint{Transport: "stdio", Source: "env", Command: cmd, Args: []string{}}
		if a := o.Getenv(ide.EnvServerStdioArgs); a != "" {
			var args []string
			if err := json.Unmarshal([]byte(a), &args); err != nil {
				o.Logger.Warn(ide.EnvServerStdioArgs+" must be a JSON array of strings", "err", err)
			} else {
				ep.Args = args
			}
		}
		p.Endpoints = append(p.Endpoints, ep)
	}
	return p, nil
}

// ConnectError says why Connect failed, with the message the real CLI
// (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts) shows in Message and every endpoint's
// own failure in Attempts.
type ConnectError struct {
	Message  string
	Attempts []Attempt
}

// Attempt is one failed endpoint.
type Attempt struct {
	Endpoint Endpoint
	Err      error
}

func (e *ConnectError) Error() string { return e.Message }

// Connect does what the real CLI does on /ide enable (IdeClient.connect in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts): Discover, refuse
// when it cannot tell the editor or the cwd is outside the workspace, then
// try each endpoint in order until one connects.
func Connect(ctx context.Context, o Options) (*Client, *Plan, error) {
	o.defaults()
	p, err := Discover(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if p.IDE == nil {
		if p.Agent == AgentQwen {
			return nil, p, &ConnectError{Message: ErrQwenUnsupportedEnvironment}
		}
		return nil, p, &ConnectError{Message: ErrUnsupportedEnvironment}
	}
	if p.Workspace != nil {
		return nil, p, &ConnectError{Message: p.Workspace.Error()}
	}
	ce := &ConnectError{Message: fmt.Sprintf("Failed to connect to IDE companion extension in %s. Please ensure the extension is running. To install the extension, run /ide install.", p.IDE.DisplayName)}
	if p.Agent == AgentQwen {
		ce.Message = qwenConnectMessage(p)
	}
	for _, ep := range p.Endpoints {
		c, err := Dial(ctx, ep, o)
		if err == nil {
			return c, p, nil
		}
		ce.Attempts = append(ce.Attempts, Attempt{Endpoint: ep, Err: err})
	}
	return nil, p, ce
}

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
	if ep.Transport == "stdio" {
		return dialStdio(ctx, ep, o)
	}
	return dialHTTP(ctx, ep, o)
}

// watchTransport observes the HTTP traffic mcp-go makes: it remembers the
// last status (mcp-go turns every 4xx at initialize into one error) and
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
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() == nil {
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
	return n, err
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
	opts := []transport.StreamableHTTPCOption{
		transport.WithContinuousListening(),
		transport.WithHTTPBasicClient(&http.Client{Transport: wt}),
		transport.WithHTTPLogger(slog.New(demoted{o.Logger.Handler()})),
	}
	if ep.Token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + ep.Token}))
	}
	tr, err := transport.NewStreamableHTTP(ep.URL(), opts...)
	if err != nil {
		return nil, &DialError{Kind: "protocol", Err: err}
	}
	life, stop := context.WithCancel(context.Background())
	cancel := func() {
		stop()
		base.CloseIdleConnections()
	}
	c.onClose = cancel
	mc := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(o.ProtocolVersion))
	if err := mc.Start(life); err != nil {
		cancel()
		return nil, &DialError{Kind: "protocol", Err: err}
	}
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
	c.mc = mc
	if err := c.start(ctx, o.ClientName, o.ClientVersion); err != nil {
		c.setState(Disconnected, "")
		_ = mc.Close()
		cancel()
		return nil, classifyHTTP(err, wt.status())
	}
	connMu.Lock()
	connecting = false
	connMu.Unlock()
	return c, nil
}

func classifyHTTP(err error, status int) error {
	var authErr *transport.AuthorizationRequiredError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return &DialError{Kind: "no-host", Host: dnsErr.Name, Err: err}
	case errors.As(err, &authErr) || status == http.StatusUnauthorized:
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
	if err := cmd.Start(); err != nil {
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	tr := transport.NewIO(stdout, stdin, nil)
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
		})
	}
	mc := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(o.ProtocolVersion))
	if err := mc.Start(life); err != nil {
		c.onClose()
		return nil, &DialError{Kind: "spawn", Err: err}
	}
	c.mc = mc
	startErr := make(chan error, 1)
	go func() { startErr <- c.start(ctx, o.ClientName, o.ClientVersion) }()
	select {
	case err = <-startErr:
	case <-exited:
		// The pipe may stay open (a child of the companion holds it), so
		// end the initialize ourselves; closing the MCP client unblocks it.
		_ = mc.Close()
		err = <-startErr
	}
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
func (d demoted) WithGroup(n string) slog.Handler      { return demoted{d.h.WithGroup(n)} }
