// Package companion is a Gemini CLI IDE companion, as the [IDE companion
// spec] defines one: the [MCP] server an editor runs so that a Gemini CLI
// in one of its terminals can read the editor's context and show proposed
// changes as diffs in it.
//
// The [Server] listens on 127.0.0.1 at a port the system picks, serves MCP
// over [Streamable HTTP] at /mcp, and announces itself through a discovery
// file ([github.com/gemkit/gemkit/ide/discovery.Write]). It knows no
// editor: it asks an [Editor] to show and close diffs and learns what the
// person does through its [Events] methods. [Start] runs one for a
// front-end: [github.com/gemkit/gemkit/companion/editorproto.Conn] (an editor
// plugin on stdio), [github.com/gemkit/gemkit/companion/lspserver.Server] (any
// language client) or the terminal. With [Config].Claude it also serves
// Claude Code's IDE endpoint (MCP over WebSocket), and with [Config].Qwen it
// announces itself to Qwen Code. The MCP SDK it uses stays inside this
// package.
//
// [IDE companion spec]: https://geminicli.com/docs/ide-integration/ide-companion-spec
// [MCP]: https://modelcontextprotocol.io/specification/2025-06-18
// [Streamable HTTP]: https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http
package companion

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/buildinfo"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/proc"
)

// Config is how a [Server] is set up. Only Workspace is usually needed; every
// other field has a default.
type Config struct {
	// Workspace holds the absolute paths of the editor's workspace folders.
	// A CLI connects only from inside one of them.
	Workspace []string
	// Trusted is the workspace trust reported to clients; nil reports none.
	Trusted *bool
	// IDEInfo names the editor in the discovery file; empty fields default
	// to ide.DefaultIDEName and ide.DefaultIDEDisplayName.
	IDEInfo ide.IDEInfo
	// PID is the editor process whose pid names the discovery file and
	// that a CLI looks for among its ancestors; default: the parent
	// process.
	PID int
	// WatchPID makes [Server.Serve] return, cleaning up, once process PID has
	// ended.
	WatchPID bool
	// [Editor] shows and closes diffs. Without one, openDiff fails with a
	// clear error and context still flows.
	Editor Editor
	// DiscoveryDir is where the discovery file goes; default discovery.Dir().
	DiscoveryDir string
	// Version is reported by GET /keep-alive and to MCP clients; default
	// the module version of the running binary.
	Version string
	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger
	// EditorTimeout bounds each call to the Editor; default 30 s. A call
	// that runs out turns into an isError tool result.
	EditorTimeout time.Duration
	// PingInterval is how often each open event stream gets a ping; default
	// 60 s, as the official companion does (gemini-cli 0.61.0
	// packages/vscode-ide-companion/src/ide-server.ts).
	PingInterval time.Duration
	// SessionIdleTTL is how long a session with no open event stream and no
	// request in flight is kept; default 2 minutes. The real client
	// (IdeClient in gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts)
	// never ends its sessions, so they must expire.
	SessionIdleTTL time.Duration
	// Debounce is how long editor events settle before one context update
	// goes out; default ide.ContextDebounce (50 ms).
	Debounce time.Duration
	// Claude also serves Claude Code's IDE protocol (claude.go): a
	// WebSocket MCP endpoint on a port of its own, announced by a lock
	// file in ClaudeLockDir.
	Claude bool
	// ClaudeLockDir is where the Claude Code lock file goes; default
	// $CLAUDE_CONFIG_DIR/ide, else ~/.claude/ide.
	ClaudeLockDir string
	// Qwen also announces the companion to Qwen Code, which looks for
	// lock files of its own: <port>.lock in QwenLockDir, with this
	// companion's port, token, workspace and ideInfo, and its own pid as
	// the ppid whose end makes Qwen Code delete the file. Env then names
	// the port and workspace in Qwen Code's variables too.
	Qwen bool
	// QwenLockDir is where the Qwen Code lock file goes; default
	// $QWEN_HOME/ide, else ~/.qwen/ide (discovery.QwenLockDir).
	QwenLockDir string
	// BridgeCommand, when set, is a program and its first arguments that
	// relay MCP on their stdin and stdout to this companion, given the
	// path of its discovery file or lock file as the last argument
	// (`gemkit ide bridge FILE`). Each file then names it as its stdio
	// command, which Gemini CLI and Qwen Code start when they cannot reach
	// the port: inside a container Gemini CLI dials host.docker.internal,
	// where nothing answers, unless its environment says otherwise.
	BridgeCommand []string
	// MaxUnauthenticated bounds the connections that have not yet carried
	// an authorised request, on the companion's port and on Claude Code's
	// each; past it the oldest is closed. Default
	// httpguard.DefaultMaxUnauthenticated (256), lowered to a quarter of
	// the process's file-descriptor limit when that is smaller.
	MaxUnauthenticated int
	// HeaderTimeout bounds how long a client may take to send a request's
	// headers from the request's first byte; default 5 s. A connection
	// that sends nothing lives up to the idle timeout (2 minutes), and the
	// connections that have not shown the token are bounded in number
	// (MaxUnauthenticated).
	HeaderTimeout time.Duration
	// BodyTimeout bounds how long an authorised request's body may take to
	// arrive; default 30 s.
	BodyTimeout time.Duration
	// MaxOutbox and MaxOutboxBytes bound the notifications waiting for one
	// session; a session past either is closed (its client reconnects).
	// Defaults 1,024 messages and 64 MiB.
	MaxOutbox      int
	MaxOutboxBytes int
	// Diagnostics, when set, answers for an Editor that reports no
	// diagnostics of its own (one that is not a DiagnosticsEditor): Claude
	// Code's getDiagnostics then gets a language server's, gemkit's own.
	Diagnostics DiagnosticsEditor
	// ExtraEnv is added to Env, e.g. discovery.ContainerEnv's variable.
	ExtraEnv map[string]string
	// OnClientsChange, when set, is called after a client connects or
	// disconnects (see [Server.Clients] for who counts), from the
	// goroutine that saw it and never with a lock of the server held,
	// so that an editor can show who is connected.
	OnClientsChange func()
	// OnReady, when set, is called once the discovery file is written and
	// requests are served, before [Server.Ready] is closed: what the program
	// says or does then comes before any front-end hears that the companion is
	// ready.
	OnReady func(*Server)
}

// Server is a running companion. It implements [Events]; all its methods are
// safe for concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	editor Editor
	// ownAll: gemkit's own servers (Config.Diagnostics) have answered for
	// every file once, so they have started (diagnostics.go).
	ownAll atomic.Bool
	guard  *httpguard.Guard
	port   int
	token  string
	hosts  [2]string
	http   *http.Server
	mcp    *mcpEndpoint

	discoveryPath string
	qwenLockPath  string // "" unless Config.Qwen
	ready         chan struct{}
	serving       atomic.Bool // set by the first Serve

	wsMu      sync.Mutex // guards workspace, trusted and discovery-file writes
	workspace []string
	trusted   *bool
	// stopped is set once shutdown has removed the discovery file: from
	// then on nothing may write it again.
	stopped bool
	// written is set once the discovery file has been written: only then
	// is there a file to remove; qwenWritten likewise for the Qwen Code
	// lock file.
	written, qwenWritten bool

	state *openFiles
	diffs *diffRegistry
	sess  *sessionRegistry

	claude  *claudeEndpoint // nil unless Config.Claude
	streams streamPeers     // clients of /stream
	// peers counts the client process lookups under way (findPeer).
	peers peerLookups

	// testBeforeEventWrite is the beforeWrite of the /mcp event streams
	// and the WebSocket peers that connect after a test sets it.
	testBeforeEventWrite atomic.Pointer[func(msg []byte)]
}

// New checks cfg, opens the listener on 127.0.0.1 with a port the system
// picks, and makes the secret token. The server answers requests only once
// [Server.Serve] runs; the discovery file is written by Serve.
func New(cfg Config) (*Server, error) {
	if err := cfg.fillDefaults(); err != nil {
		return nil, err
	}
	workspace, err := checkWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	ln, err := httpguard.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("companion: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		editor:    cfg.Editor,
		port:      port,
		token:     token,
		hosts:     [2]string{"127.0.0.1:" + strconv.Itoa(port), "localhost:" + strconv.Itoa(port)},
		ready:     make(chan struct{}),
		workspace: workspace,
		trusted:   cfg.Trusted,
	}
	if s.editor == nil {
		s.editor = noEditor{}
	}
	s.discoveryPath = filepath.Join(cfg.DiscoveryDir, discovery.FileName(cfg.PID, port))
	if cfg.Qwen {
		s.qwenLockPath = filepath.Join(cfg.QwenLockDir, discovery.QwenLockName(port))
	}
	s.sess = newSessionRegistry(s)
	s.state = newOpenFiles(cfg.Debounce, s.contextChanged)
	s.diffs = newDiffRegistry()
	s.mcp = newMCPEndpoint(s)
	if s.guard, err = httpguard.New(ln, s.guardConfig(token)); err != nil {
		ln.Close()
		return nil, fmt.Errorf("companion: %w", err)
	}
	s.http = s.guard.Server(s.routes())
	if cfg.Claude {
		if s.claude, err = newClaudeEndpoint(s); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return s, nil
}

// fillDefaults puts in what the caller left empty: the editor's pid and
// names, the folders of the discovery and lock files, and the timers
// and queue limits. An editor pid that cannot be watched, or a home
// that cannot hold a lock file asked for, is an error.
func (cfg *Config) fillDefaults() error {
	if cfg.IDEInfo.Name == "" {
		cfg.IDEInfo.Name = ide.DefaultIDEName
	}
	if cfg.IDEInfo.DisplayName == "" {
		cfg.IDEInfo.DisplayName = ide.DefaultIDEDisplayName
	}
	if cfg.PID == 0 {
		cfg.PID = os.Getppid()
	}
	if cfg.PID < 0 {
		return fmt.Errorf("companion: invalid editor pid %d", cfg.PID)
	}
	if cfg.WatchPID && !discovery.ProcessAlive(cfg.PID) {
		return fmt.Errorf("companion: editor process %d does not exist", cfg.PID)
	}
	if cfg.DiscoveryDir == "" {
		cfg.DiscoveryDir = discovery.Dir()
	}
	if cfg.Version == "" {
		cfg.Version = moduleVersion()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EditorTimeout <= 0 {
		cfg.EditorTimeout = 30 * time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 60 * time.Second
	}
	if cfg.SessionIdleTTL <= 0 {
		cfg.SessionIdleTTL = 2 * time.Minute
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = ide.ContextDebounce
	}
	if cfg.Claude && cfg.ClaudeLockDir == "" {
		home, err := os.UserHomeDir()
		if err != nil && os.Getenv(ide.AgentClaude.HomeEnv) == "" {
			return fmt.Errorf("companion: where to put the Claude Code lock file: %w", err)
		}
		cfg.ClaudeLockDir = discovery.ClaudeLockDir(os.Getenv, home)
	}
	if cfg.Qwen && cfg.QwenLockDir == "" {
		home, err := os.UserHomeDir()
		if err != nil && os.Getenv(ide.AgentQwen.HomeEnv) == "" {
			return fmt.Errorf("companion: where to put the Qwen Code lock file: %w", err)
		}
		cfg.QwenLockDir = discovery.QwenLockDir(os.Getenv, home)
	}
	if cfg.MaxOutbox <= 0 {
		cfg.MaxOutbox = maxQueued
	}
	if cfg.MaxOutboxBytes <= 0 {
		cfg.MaxOutboxBytes = maxQueuedBytes
	}
	return nil
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// URL is the MCP endpoint clients connect to.
func (s *Server) URL() string { return "http://" + s.hosts[0] + ide.MCPPath }

// Token is the bearer token clients must send.
func (s *Server) Token() string { return s.token }

// DiscoveryPath is the path of the discovery file [Server.Serve] writes.
func (s *Server) DiscoveryPath() string { return s.discoveryPath }

// Workspace holds the workspace folders as they stand.
func (s *Server) Workspace() []string { return s.workspaceSnapshot() }

// QwenLockPath is the path of the lock file Serve writes for Qwen Code;
// "" unless [Config.Qwen].
func (s *Server) QwenLockPath() string { return s.qwenLockPath }

// Ready is closed once the discovery file exists and requests are served.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// DiscoveryFile is the content of the discovery file as it stands.
func (s *Server) DiscoveryFile() ide.DiscoveryFile {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return s.discoveryFileLocked()
}

func (s *Server) discoveryFileLocked() ide.DiscoveryFile {
	info := s.cfg.IDEInfo
	return ide.DiscoveryFile{
		Port:          s.port,
		WorkspacePath: discovery.JoinWorkspace(s.workspace),
		AuthToken:     s.token,
		IDEInfo:       &info,
		Stdio:         s.bridge(s.discoveryPath),
	}
}

// qwenLockLocked is the content of the Qwen Code lock file: the discovery
// file's, with this process as the ppid (it lives exactly as long as the
// companion, so a companion killed outright leaves a file Qwen Code
// deletes) and the editor's name also as ideName, as Qwen Code's own
// companion writes it (packages/vscode-ide-companion/src/ide-server.ts
// in QwenLM/qwen-code).
func (s *Server) qwenLockLocked() ide.DiscoveryFile {
	f := s.discoveryFileLocked()
	f.Stdio = s.bridge(s.qwenLockPath)
	f.PPID = os.Getpid()
	f.IDEName = s.cfg.IDEInfo.DisplayName
	return f
}

// bridge is the stdio command a file at path names (Config.BridgeCommand
// with path), or nil.
func (s *Server) bridge(path string) *ide.StdioConfig {
	if len(s.cfg.BridgeCommand) == 0 {
		return nil
	}
	args := append(append([]string{}, s.cfg.BridgeCommand[1:]...), path)
	return &ide.StdioConfig{Command: s.cfg.BridgeCommand[0], Args: args}
}

// Env is the set of environment variables the editor should give its
// terminals (GEMINI_CLI_IDE_SERVER_PORT, _WORKSPACE_PATH, _AUTH_TOKEN and
// GEMINI_CLI_IDE_PID; Claude Code's port; Qwen Code's
// QWEN_CODE_IDE_SERVER_PORT and _WORKSPACE_PATH), with Config.ExtraEnv.
func (s *Server) Env() map[string]string {
	f := s.DiscoveryFile()
	env := discovery.Env(f, s.cfg.PID)
	if s.claude != nil {
		env[discovery.ClaudeEnvPort] = strconv.Itoa(s.claude.port)
	}
	if s.cfg.Qwen {
		env[ide.EnvQwenServerPort] = strconv.Itoa(f.Port)
		env[ide.EnvQwenWorkspacePath] = f.WorkspacePath
	}
	for k, v := range s.cfg.ExtraEnv {
		env[k] = v
	}
	return env
}

// Context is the editor context as clients will next receive it.
func (s *Server) Context() ide.Context { return s.state.context(s.trustedSnapshot()) }

// Serve writes the discovery file (after removing the stale files of dead
// editors), serves requests until ctx ends or the watched editor process
// exits, and then removes the discovery file and closes every session. It
// returns nil after such a clean stop. Serve may be called once.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("companion: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	httpErr := make(chan error, 1)
	go func() { httpErr <- s.http.Serve(s.guard.Listener()) }()

	// Claude Code's lock file goes first: a Claude Code that does not find
	// it looks again only a second later (Gemini CLI and Qwen Code read
	// theirs when they connect; the clean-ups remove others' files only).
	claudeErr := make(chan error, 1)
	if s.claude != nil {
		if err := s.claude.start(claudeErr); err != nil {
			s.shutdown()
			<-httpErr
			return err
		}
	}
	// The files are written before the folders are cleaned: when a folder
	// is not writable, its clear error is the only thing said.
	if err := s.writeDiscovery(); err != nil {
		s.shutdown()
		<-httpErr
		return err
	}
	s.cleanUp()

	if s.cfg.OnReady != nil {
		s.cfg.OnReady(s)
	}
	close(s.ready)
	s.log.Debug("companion ready", "port", s.port, "discovery", s.discoveryPath)

	go s.sess.sweep(ctx)
	if s.cfg.WatchPID {
		go func() {
			watchProcess(ctx, s.cfg.PID)
			if ctx.Err() == nil {
				s.log.Info("editor process ended; shutting down", "pid", s.cfg.PID)
			}
			cancel()
		}()
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-httpErr:
		err = fmt.Errorf("companion: serve http: %w", err)
	case err = <-claudeErr:
		err = fmt.Errorf("companion: serve claude code: %w", err)
	}
	s.shutdown()
	if err == nil {
		if e := <-httpErr; e != nil && !errors.Is(e, http.ErrServerClosed) {
			err = fmt.Errorf("companion: serve http: %w", e)
		}
	}
	return err
}

// writeDiscovery writes the discovery file (and Qwen Code's lock file)
// from the current workspace, unless the server has stopped: a workspace
// update racing with the stop must not leave a file that names a closed
// port. A lock file that cannot be written is logged, not fatal: Gemini
// CLI and Claude Code are still served.
func (s *Server) writeDiscovery() error {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.stopped {
		return nil
	}
	_, err := discovery.Write(s.cfg.DiscoveryDir, s.cfg.PID, s.port, s.discoveryFileLocked())
	if err != nil {
		return fmt.Errorf("companion: %w", err)
	}
	s.written = true
	if s.cfg.Qwen {
		if _, err := discovery.WriteQwenLock(s.cfg.QwenLockDir, s.port, s.qwenLockLocked()); err != nil {
			s.log.Warn("Qwen Code will not find this companion", "err", err)
		} else {
			s.qwenWritten = true
		}
	}
	return nil
}

func (s *Server) trustedSnapshot() *bool {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return s.trusted
}

func (s *Server) workspaceSnapshot() []string {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return append([]string(nil), s.workspace...)
}

// checkWorkspace returns the cleaned workspace folders, each of which must
// be an absolute path to an existing directory.
func checkWorkspace(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	seen := map[string]bool{}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("companion: workspace folder %q is not an absolute path", p)
		}
		p = filepath.Clean(p)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("companion: workspace folder: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("companion: workspace folder %s is not a directory", p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// newToken makes the bearer token: 256 random bits, hex-encoded.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("companion: make auth token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func moduleVersion() string { return buildinfo.Version() }

// watchProcess returns once process pid no longer exists or ctx ends. It
// waits on the process's pidfd (proc.WaitExit), so that an idle companion
// wakes for nothing; where the kernel has none, it looks four times a
// second.
func watchProcess(ctx context.Context, pid int) {
	if err := proc.WaitExit(ctx, pid); err == nil || ctx.Err() != nil {
		return
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if !discovery.ProcessAlive(pid) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// noEditor stands in when no editor is attached: diffs cannot be shown.
type noEditor struct{}

var errNoEditor = errors.New("no editor is attached to this companion, so the diff cannot be shown")

func (noEditor) OpenDiff(context.Context, string, string) error { return errNoEditor }
func (noEditor) CloseDiff(context.Context, string) (string, bool, error) {
	return "", false, nil
}
func (noEditor) FileWritten(context.Context, string) error { return nil }
