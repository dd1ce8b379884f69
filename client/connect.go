package client

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/buildinfo"
)

// Transport is how an [Endpoint] is reached.
type Transport string

// Transports.
const (
	TransportHTTP  Transport = "http"  // MCP Streamable HTTP on Host:Port
	TransportStdio Transport = "stdio" // MCP on the stdin and stdout of Command
)

// EndpointSource says where an [Endpoint] came from.
type EndpointSource string

// Sources of an Endpoint.
const (
	FromFile EndpointSource = "file" // the discovery file (or lock file)
	FromEnv  EndpointSource = "env"  // the environment's variables
)

// Endpoint is one way to reach a companion.
type Endpoint struct {
	Transport Transport      `json:"transport"`
	Source    EndpointSource `json:"source"`
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
	if e.Transport == TransportStdio {
		return fmt.Sprintf("stdio %s %v (%s)", e.Command, e.Args, e.Source)
	}
	return fmt.Sprintf("%s (%s)", e.URL(), e.Source)
}

// Options configure [Discover], [Connect] and [Dial]. The zero value behaves
// like the real CLI (IdeClient.connect in gemini-cli 0.61.0
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
	// Agent is the CLI whose rules [Discover] and [Connect] follow:
	// [AgentGemini] (the default, "") or AgentQwen (Qwen Code's lock files,
	// variables and host rule; Dir is then its lock folder).
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
	// Agent is the CLI whose rules made the plan ([Options.Agent]; "" is
	// Gemini CLI).
	Agent   string               `json:"agent,omitempty"`
	Process discovery.IDEProcess `json:"process"`
	// Choice is Gemini CLI's choice of a discovery file, QwenChoice Qwen
	// Code's of a lock file; one of them is set.
	Choice     *discovery.Choice     `json:"-"`
	QwenChoice *discovery.QwenChoice `json:"-"`
	// ChoiceErr is set when the discovery directory could not be read.
	ChoiceErr error `json:"-"`
	// Contents is the chosen file's, nil when no file is chosen.
	Contents *discovery.Contents `json:"-"`
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
		p.Contents = p.Choice.Chosen.Contents
	}
	p.readContents(o, DetectIDE, ide.EnvAuthToken, ide.EnvWorkspacePath)
	p.Workspace = discovery.ValidateWorkspace(p.WorkspacePath, o.Cwd)

	host := o.Host
	if host == "" {
		host = ServerHost(o.Getenv, o.InContainer())
	}
	if c := p.Contents; c != nil {
		if c.Port != 0 {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: TransportHTTP, Source: FromFile, Host: host, Port: c.Port, PortText: c.PortText, Token: p.AuthToken})
		}
		if c.Stdio != nil {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: TransportStdio, Source: FromFile, Command: c.Stdio.Command, Args: c.Stdio.Args})
		}
	}
	if port := o.Getenv(ide.EnvServerPort); port != "" {
		n, _ := discovery.ParseJSInt(port)
		p.Endpoints = append(p.Endpoints, Endpoint{Transport: TransportHTTP, Source: FromEnv, Host: host, Port: n, PortText: port, Token: p.AuthToken})
	}
	if cmd := o.Getenv(ide.EnvServerStdioCmd); cmd != "" {
		ep := Endpoint{Transport: TransportStdio, Source: FromEnv, Command: cmd, Args: []string{}}
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

// readContents takes what the chosen file says (p.Contents, nil when
// none) as the real CLIs take it: the editor, named by detect from the
// file's ideInfo, the editor process's command and the environment; the
// token and the workspace, from the file, else from the variables
// tokenVar ("" for none) and workspaceVar.
func (p *Plan) readContents(o Options, detect func(*ide.IDEInfo, string, func(string) string) *ide.IDEInfo, tokenVar, workspaceVar string) {
	c := p.Contents
	var fileInfo *ide.IDEInfo
	if c != nil {
		fileInfo = c.IDEInfo
	}
	p.IDE = detect(fileInfo, p.Process.Command, o.Getenv)
	if c != nil && c.AuthToken != nil {
		p.AuthToken, p.TokenSource = *c.AuthToken, "file"
	} else if tokenVar != "" {
		if t, ok := o.LookupEnv(tokenVar); ok {
			p.AuthToken, p.TokenSource = t, "env"
		}
	}
	if c != nil && c.WorkspacePath != nil {
		p.WorkspacePath, p.WorkspaceSource = c.WorkspacePath, "file"
	} else if w, ok := o.LookupEnv(workspaceVar); ok {
		p.WorkspacePath, p.WorkspaceSource = &w, "env"
	}
}

// ConnectError says why [Connect] failed, with the message the real CLI
// (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts) shows in Message and every endpoint's
// own failure in Attempts. Err is the refusal Message words, when it is
// one: ErrUnsupportedEnvironment or ErrQwenUnsupportedEnvironment (no
// editor named), the workspace check's error ([Plan.Workspace]), or
// ErrQwenWorkspaceRejected.
type ConnectError struct {
	Message  string
	Attempts []Attempt
	Err      error
}

// Attempt is one failed endpoint.
type Attempt struct {
	Endpoint Endpoint
	Err      error
}

func (e *ConnectError) Error() string { return e.Message }

func (e *ConnectError) Unwrap() error { return e.Err }

// refusal is the ConnectError of a refusal before any attempt.
func refusal(err error) *ConnectError { return &ConnectError{Message: err.Error(), Err: err} }

// Connect does what the real CLI does on /ide enable (IdeClient.connect in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts): [Discover], refuse
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
			return nil, p, refusal(ErrQwenUnsupportedEnvironment)
		}
		return nil, p, refusal(ErrUnsupportedEnvironment)
	}
	if p.Workspace != nil {
		return nil, p, refusal(p.Workspace)
	}
	ce := &ConnectError{Message: fmt.Sprintf("Failed to connect to IDE companion extension in %s. Please ensure the extension is running. To install the extension, run /ide install.", p.IDE.DisplayName)}
	if p.Agent == AgentQwen {
		ce = qwenConnectError(p)
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
