// Package acp serves gemkit's agent over the Agent Client Protocol
// (agentclientprotocol.com, protocol version 1): newline-delimited
// JSON-RPC 2.0 on stdio, the editor as the client. It is an adapter: each
// ACP session is one agent.Agent built by the command, with a Host that
// reads files through the client's fs/read_text_file, has edits reviewed
// through session/request_permission and written through
// fs/write_text_file, asks before an extension tool runs, and offers the
// tools of the MCP servers the client passes.
//
// Every session's conversation is stored (Config.Sessions, package
// store), so that the editor can list, load, resume and delete it after a
// restart; its model and approval mode are config options.
//
// The protocol's wire types and JSON-RPC come from
// github.com/coder/acp-go-sdk, used only here.
package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// ProtocolVersion is the ACP version gemkit speaks.
const ProtocolVersion = sdk.ProtocolVersionNumber

// DefaultPermissionTimeout bounds how long a permission request waits for
// the person; a request left unanswered is a rejection.
const DefaultPermissionTimeout = 10 * time.Minute

// Config is what Serve needs from the command.
type Config struct {
	// NewAgent builds one session's agent from what the session gives
	// it (s: its folder, its host, its tool consent, its sinks, its
	// clients' MCP tools) and what the command has (the model, the
	// extensions, the runner). Serve sets nothing on the agent it gets.
	NewAgent func(ctx context.Context, s Session) (*agent.Agent, error)
	// Version is gemkit's version, for agentInfo.
	Version string
	// ConfigPath is the model config file, named in authMethods.
	ConfigPath string
	// PermissionTimeout bounds each permission request
	// (0: DefaultPermissionTimeout).
	PermissionTimeout time.Duration
	// Sessions stores every session's conversation, for session/list,
	// session/load, session/resume and session/delete; nil stores none
	// and offers none of them.
	Sessions *store.Store
	// Model names the configured model: the model option's value for a
	// session that chose none ("": "default").
	Model string
	// ListModels, when set, gives the models the provider offers
	// (model.List), asked once a connection, from initialize on; nil
	// offers Model alone.
	ListModels func(ctx context.Context) ([]model.Info, error)
	// Logout forgets the credentials `gemkit login` stored, for ACP's
	// logout method; nil offers no logout.
	Logout func() error
	// Stderr receives the output of the MCP servers' stderr.
	Stderr io.Writer
	Log    *slog.Logger
}

// Session is what one ACP session gives the agent the command builds for
// it.
type Session struct {
	// Cwd is the session's folder, the agent's workspace.
	Cwd string
	// Host reads and writes files through the client and has edits
	// reviewed in a permission request (Agent.Host).
	Host agent.Host
	// Ask asks the person before an extension tool runs without
	// recorded consent, in a permission request: allow once, always or
	// reject (the Runner's Asker).
	Ask toolrun.Asker
	// OnText and OnEvent report the model's text and the tool calls to
	// the client (Agent.OnText, Agent.OnEvent).
	OnText  func(string)
	OnEvent func(agent.Event)
	// Tools are the tools of the MCP servers the client passed
	// (Agent.Tools).
	Tools []agent.ToolSource
	// Model is the model the session chose ("": the configured one).
	Model string
}

// Serve answers one client on r/w until the client closes its end or ctx
// ends; then every session's running work is stopped (model requests,
// tools, MCP servers) before it returns.
func Serve(ctx context.Context, r io.Reader, w io.Writer, cfg Config) error {
	if cfg.PermissionTimeout <= 0 {
		cfg.PermissionTimeout = DefaultPermissionTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	s := &server{cfg: cfg, sessions: map[sdk.SessionId]*session{}, wire: newWire(w), listDone: make(chan struct{})}
	s.wire.sessionDelete = cfg.Sessions != nil
	s.conn = sdk.NewAgentSideConnection(s, s.wire, newInbound(r))
	s.conn.SetLogger(cfg.Log)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	s.closeAll()
	return nil
}

// server is the agent side of one connection.
type server struct {
	cfg  Config
	conn *sdk.AgentSideConnection
	wire *wire

	mu       sync.Mutex
	client   sdk.ClientCapabilities
	name     string
	inited   bool
	sessions map[sdk.SessionId]*session
	// listOnce starts the one request for the model list; listDone is
	// closed when listed holds its answer.
	listOnce sync.Once
	listDone chan struct{}
	listed   []model.Info
}

var _ sdk.Agent = (*server)(nil)

func (s *server) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.client, s.inited = p.ClientCapabilities, true
	s.name = "the editor"
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		s.name = p.ClientInfo.Name
	}
	s.mu.Unlock()
	s.startList()
	// The spec: answer the client's version when supported, else the
	// latest one the agent supports; the client then decides.
	return sdk.InitializeResponse{
		ProtocolVersion:   ProtocolVersion,
		AgentInfo:         &sdk.Implementation{Name: "gemkit", Title: sdk.Ptr("gemkit"), Version: s.cfg.Version},
		AgentCapabilities: s.capabilities(),
		AuthMethods:       s.authMethods(),
	}, nil
}

// authMethods say where gemkit finds its model credentials: `gemkit
// login` run in a terminal (Terminal Auth), offered to a client that
// declares it can run one (clientCapabilities.auth.terminal, or the
// "terminal-auth" key of its _meta, as the ACP registry's validator and
// earlier clients declare it); the environment; the config file.
func (s *server) authMethods() []sdk.AuthMethod {
	cfgFile := s.cfg.ConfigPath
	if cfgFile == "" {
		cfgFile = "gemkit/config.json in your config folder"
	}
	var ms []sdk.AuthMethod
	s.mu.Lock()
	terminal := s.client.Auth.Terminal || s.client.Meta["terminal-auth"] == true
	s.mu.Unlock()
	if terminal {
		ms = append(ms, sdk.AuthMethod{Terminal: &sdk.AuthMethodTerminalInline{
			Id: terminalAuthID, Name: "Sign in with a Gemini API key", Type: "terminal",
			Description: sdk.Ptr("Runs `gemkit login` in a terminal: paste a key from https://aistudio.google.com/apikey; it is stored for you alone."),
			Args:        []string{"login"},
		}})
	}
	return append(ms, []sdk.AuthMethod{
		{EnvVar: &sdk.AuthMethodEnvVarInline{
			Id: "gemini-api-key", Name: "Gemini API key",
			Description: sdk.Ptr("gemkit reads the key from GEMINI_API_KEY (or GOOGLE_API_KEY); Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION."),
			Link:        sdk.Ptr("https://aistudio.google.com/apikey"),
			Vars:        []sdk.AuthEnvVar{{Name: "GEMINI_API_KEY", Label: sdk.Ptr("Gemini API key"), Secret: true}},
		}},
		{Agent: &sdk.AuthMethodAgent{
			Id: "config-file", Name: "gemkit config file",
			Description: sdk.Ptr("Model, provider and the environment variable holding an OpenAI-compatible endpoint's key come from " + cfgFile + " (see docs/agent.md)."),
		}},
	}...)
}

// UnstableLogout answers ACP's logout: the key `gemkit login` stored is
// removed; a key the environment gives is the environment's to unset.
func (s *server) UnstableLogout(context.Context, sdk.UnstableLogoutRequest) (sdk.UnstableLogoutResponse, error) {
	if s.cfg.Logout == nil {
		return sdk.UnstableLogoutResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodLogout)
	}
	if err := s.cfg.Logout(); err != nil {
		return sdk.UnstableLogoutResponse{}, withWords(sdk.NewInternalError, err.Error())
	}
	return sdk.UnstableLogoutResponse{}, nil
}

// terminalAuthID is the Terminal Auth method's id.
const terminalAuthID = "gemkit-login"

// Authenticate accepts either method: the credentials are read when a
// session starts, and session/new fails with "authentication required"
// and what to set when they are missing.
func (s *server) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	for _, m := range s.authMethods() {
		if m.Terminal != nil && m.Terminal.Id == p.MethodId {
			return sdk.AuthenticateResponse{}, withWords(sdk.NewInvalidParams, "gemkit-login is a terminal method: run `gemkit login` in a terminal instead of calling authenticate")
		}
		if (m.EnvVar != nil && m.EnvVar.Id == p.MethodId) || (m.Agent != nil && m.Agent.Id == p.MethodId) {
			return sdk.AuthenticateResponse{}, nil
		}
	}
	return sdk.AuthenticateResponse{}, withWords(sdk.NewInvalidParams, fmt.Sprintf("unknown auth method %q; gemkit offers gemini-api-key and config-file", p.MethodId))
}

func (s *server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	rec := &store.Session{Meta: store.Meta{ID: store.NewID(), Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories}}
	sess, err := s.open(ctx, rec, p.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	opts, modes := sess.options(ctx)
	return sdk.NewSessionResponse{SessionId: sess.id, ConfigOptions: opts, Modes: modes}, nil
}

// open starts the session rec describes, new or stored, in this
// connection: its folder checked, the MCP servers connected, its agent
// built with its model and given its conversation. A new session is
// stored at once, so that it can be resumed before its first prompt.
func (s *server) open(ctx context.Context, rec *store.Session, servers []sdk.McpServer) (*session, error) {
	s.mu.Lock()
	inited := s.inited
	s.mu.Unlock()
	if !inited {
		return nil, withWords(sdk.NewInvalidRequest, "call initialize first")
	}
	if !filepath.IsAbs(rec.Cwd) {
		return nil, withWords(sdk.NewInvalidParams, fmt.Sprintf("cwd %q must be an absolute path", rec.Cwd))
	}
	if fi, err := os.Stat(rec.Cwd); err != nil || !fi.IsDir() {
		return nil, withWords(sdk.NewInvalidParams, fmt.Sprintf("cwd %s is not a folder", rec.Cwd))
	}
	s.mu.Lock()
	sess := newSession(s, rec)
	s.mu.Unlock()
	if len(servers) > 0 {
		tools, err := connectMCP(ctx, servers, rec.Cwd, s.cfg.Stderr, s.cfg.Log)
		if err != nil {
			return nil, withWords(sdk.NewInvalidParams, err.Error())
		}
		sess.mcp = tools
	}
	a, err := s.cfg.NewAgent(ctx, sess.given())
	if err != nil {
		sess.close()
		if isCredentials(err) {
			return nil, withWords(sdk.NewAuthRequired, err.Error())
		}
		return nil, withWords(sdk.NewInternalError, err.Error())
	}
	sess.setAgent(a, rec.Model)
	if rec.Created.IsZero() {
		sess.meta.Created = time.Now().UTC()
		sess.meta.Updated = sess.meta.Created
		sess.save()
	}
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	return sess, nil
}

// isCredentials reports a model that could not be opened for want of
// credentials.
func isCredentials(err error) bool {
	m := err.Error()
	return model.IsKind(err, model.KindAuth) || strings.Contains(m, "API key") || strings.Contains(m, "credentials")
}

func (s *server) session(id sdk.SessionId) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return nil, withWords(sdk.NewInvalidParams, fmt.Sprintf("no session %q is open: call session/new, or session/load or session/resume for a stored one", id))
	}
	return sess, nil
}

func (s *server) drop(id sdk.SessionId) {
	s.mu.Lock()
	sess := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if sess != nil {
		sess.close()
	}
}

func (s *server) closeAll() {
	s.mu.Lock()
	all := s.sessions
	s.sessions = map[sdk.SessionId]*session{}
	s.mu.Unlock()
	for _, sess := range all {
		sess.close()
	}
}

func (s *server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	sess, err := s.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sess.prompt(ctx, p.Prompt)
}

// Cancel: the connection has already cancelled the prompt's context,
// which stops the model request, kills running tools and answers pending
// permission requests as cancelled.
func (s *server) Cancel(context.Context, sdk.CancelNotification) error { return nil }

// CloseSession stops the session's running work, as session/cancel
// would, and frees what it holds; its conversation stays stored.
func (s *server) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	if _, err := s.session(p.SessionId); err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.drop(p.SessionId)
	return sdk.CloseSessionResponse{}, nil
}

// stopReason maps how a Run ended to ACP's stop reasons; a failure of
// the model's API is an error answer, except a refusal.
func stopReason(out agent.Outcome) (sdk.StopReason, error) {
	switch out.Status {
	case agent.Done:
		return sdk.StopReasonEndTurn, nil
	case agent.MaxTokens:
		return sdk.StopReasonMaxTokens, nil
	case agent.MaxTurns:
		return sdk.StopReasonMaxTurnRequests, nil
	case agent.Cancelled:
		return sdk.StopReasonCancelled, nil
	}
	if model.IsKind(out.Err, model.KindSafety) {
		return sdk.StopReasonRefusal, nil
	}
	msg := "the model's API failed"
	if out.Err != nil {
		msg = out.Err.Error()
	}
	return "", withWords(sdk.NewInternalError, msg)
}

// withWords is the error kind made with the words a person needs in its
// message, where clients print it: acpx and Zed show error.message and
// never error.data, so "Authentication required" alone left the person
// without what to set. The form, "KIND: WORDS", is the one the protocol's
// TypeScript library gives (RequestError.authRequired(data,
// additionalMessage)); the words stay in data.error too, for clients that
// read it.
func withWords(kind func(data any) *sdk.RequestError, words string) *sdk.RequestError {
	e := kind(map[string]any{"error": words})
	e.Message += ": " + words
	return e
}
