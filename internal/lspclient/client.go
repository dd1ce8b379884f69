// Package lspclient is gemkit's client of one language server: it starts
// the server's process (through the caller's Starter: where and with which
// rights it runs is the caller's policy, not this package's), initializes it, keeps the documents it was asked
// about open and in step with the disk, collects the diagnostics it
// publishes and what it says it is busy with, and asks it the questions of
// codeintel.Source (definition, references, hover, symbols, call
// hierarchy). Messages go through internal/jsonrpc with LSP's
// Content-Length framing.
package lspclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/buildinfo"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Config says which server to start and how.
type Config struct {
	// Name names the server in messages ("gopls").
	Name string
	// Command starts it; Command[0] is an absolute path (found on PATH).
	Command []string
	// Dir is the workspace folder: the server's working directory and
	// root.
	Dir string
	// Env is the server's environment; nil is gemkit's own.
	Env []string
	// InitializationOptions are sent in initialize.
	InitializationOptions json.RawMessage
	// Settings answer workspace/configuration (by dotted section) and are
	// sent once in workspace/didChangeConfiguration.
	Settings json.RawMessage
	// RequestTimeout bounds each request but initialize; 0 is
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// InitTimeout bounds start-up and initialize; 0 is DefaultInitTimeout.
	InitTimeout time.Duration
	// Logger receives what the server logs (at debug level) and what
	// happens to it.
	Logger *slog.Logger
	// Start starts the server's process; nil is ExecStart, a plain
	// child process with gemkit's rights. Where the process runs, and
	// with which rights, is the caller's to say: gemkit's own pools give
	// one that starts it in the sandbox (internal/langserver).
	Start Starter
	// NoProcessID sends initialize's processId as null: for a server
	// started where gemkit's pid names no process (a sandbox's own PID
	// namespace), which a server that watches its client's pid
	// (vscode-languageserver's, every three seconds) would take for
	// gone and exit. Such a starter ends the server with gemkit instead.
	NoProcessID bool
}

// Starter starts a server's process: argv is Command, dir the workspace,
// env the whole environment (nil: the starter's choice), stderr where
// what it logs goes. ctx bounds only the start.
type Starter func(ctx context.Context, argv []string, dir string, env []string, stderr io.Writer) (Process, error)

// Process is a started server, speaking LSP on Stdin and Stdout.
type Process interface {
	// Stdin writes to the server, Stdout reads from it.
	Stdin() io.WriteCloser
	Stdout() io.ReadCloser
	// Wait waits for it to exit (once, from one goroutine).
	Wait() error
	// Kill ends it and everything it started.
	Kill()
	// Pid is its process id as gemkit sees it.
	Pid() int
}

// ExecStart starts the server as a plain child process of gemkit's, in a
// process group of its own that Kill ends whole.
func ExecStart(ctx context.Context, argv []string, dir string, env []string, stderr io.Writer) (Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = stderr
	setProcAttr(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &execProcess{cmd: cmd, stdin: stdin, stdout: stdout}, nil
}

type execProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func (p *execProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *execProcess) Stdout() io.ReadCloser { return p.stdout }
func (p *execProcess) Wait() error           { return p.cmd.Wait() }
func (p *execProcess) Kill()                 { killGroup(p.cmd.Process.Pid) }
func (p *execProcess) Pid() int              { return p.cmd.Process.Pid }

// Defaults of Config.
const (
	DefaultRequestTimeout = 20 * time.Second
	DefaultInitTimeout    = 60 * time.Second
	// stderrTail is how much of the server's stderr is kept for the
	// message when it exits.
	stderrTail = 4 << 10
	// maxDocBytes bounds a document sent to a server.
	maxDocBytes = 8 << 20
)

// Client is a running language server. Its methods are safe for
// concurrent use.
type Client struct {
	cfg  Config
	log  *slog.Logger
	proc Process
	rpc  *conn
	caps capabilities

	exited  chan struct{} // closed when the process has exited
	exitErr error         // set before exited is closed
	stderr  *tail

	sendMu sync.Mutex // orders document changes (see send)
	mu     sync.Mutex
	docs   map[string]*doc
	diags  map[string]published
	pulled map[string][]codeintel.Diagnostic // asked for since the last publish of the file
	seq    uint64                            // publishDiagnostics received so far
	// changeSeq is seq when a change was last sent (a document's new
	// text, files changed on disk): a server answers it by publishing
	// again for the files it affects, so a publish before it may be
	// stale.
	changeSeq uint64
	// unanswered are the documents changed (by path, with when) that
	// the server has not published for since.
	unanswered map[string]time.Time
	// answeredSeq is seq when the last of them was published for: the
	// server's publishes from then on follow the change.
	answeredSeq uint64
	changed     chan struct{} // closed and replaced at each publish or progress change
	progress    map[string]string
	lastPub     time.Time
}

// doc is a document the server has open.
type doc struct {
	version int
	mod     time.Time
	size    int64
	text    string
	overlay bool   // text given by Changed, not read from disk
	sentSeq uint64 // c.seq when the latest version was sent
}

// published is the latest publishDiagnostics of a file.
type published struct {
	version *int
	diags   []codeintel.Diagnostic
	seq     uint64
}

// Start starts the server and initializes it for the workspace Dir.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("lspclient: no command")
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = DefaultInitTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Client{
		cfg:        cfg,
		log:        cfg.Logger.With("server", cfg.Name),
		exited:     make(chan struct{}),
		stderr:     &tail{max: stderrTail},
		docs:       map[string]*doc{},
		diags:      map[string]published{},
		pulled:     map[string][]codeintel.Diagnostic{},
		unanswered: map[string]time.Time{},
		changed:    make(chan struct{}),
		progress:   map[string]string{},
	}
	start := cfg.Start
	if start == nil {
		start = ExecStart
	}
	proc, err := start(ctx, cfg.Command, cfg.Dir, cfg.Env, c.stderr)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Name, err)
	}
	c.proc = proc
	c.rpc = newConn(proc.Stdout(), proc.Stdin(), c.handle, c.log)
	go func() {
		err := proc.Wait()
		c.rpc.close()
		if err == nil {
			err = errors.New("it exited")
		} else {
			err = fmt.Errorf("it exited (%v)", err)
		}
		if t := strings.TrimSpace(c.stderr.String()); t != "" {
			err = fmt.Errorf("%w; its last output: %s", err, lastLines(t, 5))
		}
		c.exitErr = err
		close(c.exited)
	}()
	ictx, cancel := context.WithTimeout(ctx, cfg.InitTimeout)
	defer cancel()
	if err := c.initialize(ictx); err != nil {
		timedOut := ictx.Err() != nil && ctx.Err() == nil
		// A server that exited by itself (a wrong command, a crash) is
		// reported with what it said; its pipe may fail a write before
		// its exit is seen.
		exited := false
		if !timedOut {
			select {
			case <-c.exited:
				exited = true
			case <-time.After(2 * time.Second):
			}
		}
		c.kill()
		<-c.exited
		switch {
		case timedOut:
			return nil, fmt.Errorf("%s did not answer initialize within %v", cfg.Name, cfg.InitTimeout)
		case exited:
			return nil, fmt.Errorf("%s could not start: %v", cfg.Name, c.exitErr)
		}
		return nil, fmt.Errorf("initialize %s: %w", cfg.Name, err)
	}
	return c, nil
}

// symbolKinds is every SymbolKind, which a client must list for servers
// to use them all.
func symbolKinds() []int {
	out := make([]int, 26)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func (c *Client) initialize(ctx context.Context) error {
	root := URI(c.cfg.Dir)
	kinds := map[string]any{"valueSet": symbolKinds()}
	var pid any = os.Getpid()
	if c.cfg.NoProcessID {
		pid = nil
	}
	params := map[string]any{
		"processId":  pid,
		"clientInfo": map[string]any{"name": "gemkit", "version": buildinfo.Version()},
		"rootUri":    root,
		"rootPath":   c.cfg.Dir,
		"workspaceFolders": []map[string]any{
			{"uri": root, "name": filepath.Base(c.cfg.Dir)},
		},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-16"}},
			"window":  map[string]any{"workDoneProgress": true},
			"workspace": map[string]any{
				"workspaceFolders":       true,
				"configuration":          true,
				"didChangeWatchedFiles":  map[string]any{"dynamicRegistration": true},
				"didChangeConfiguration": map[string]any{"dynamicRegistration": false},
				"symbol":                 map[string]any{"symbolKind": kinds},
			},
			"textDocument": map[string]any{
				"synchronization":    map[string]any{"didSave": false},
				"definition":         map[string]any{"linkSupport": true},
				"implementation":     map[string]any{"linkSupport": true},
				"references":         map[string]any{},
				"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true, "symbolKind": kinds},
				"callHierarchy":      map[string]any{},
				"publishDiagnostics": map[string]any{"versionSupport": true},
				"diagnostic":         map[string]any{"relatedDocumentSupport": false},
			},
		},
	}
	if len(c.cfg.InitializationOptions) > 0 {
		params["initializationOptions"] = c.cfg.InitializationOptions
	}
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := c.rpc.call(ctx, "initialize", params, &res); err != nil {
		return err
	}
	c.caps = capabilities{raw: res.Capabilities}
	if err := c.rpc.notify("initialized", map[string]any{}); err != nil {
		return err
	}
	if len(c.cfg.Settings) > 0 {
		return c.rpc.notify("workspace/didChangeConfiguration", map[string]any{"settings": c.cfg.Settings})
	}
	return nil
}

// handle answers the server's requests and takes its notifications.
func (c *Client) handle(method string, params json.RawMessage) (any, error) {
	switch method {
	case "textDocument/publishDiagnostics":
		c.publish(params)
		return nil, nil
	case "$/progress":
		c.onProgress(params)
		return nil, nil
	case "window/logMessage", "window/showMessage":
		var m struct {
			Type    int    `json:"type"`
			Message string `json:"message"`
		}
		json.Unmarshal(params, &m)
		c.log.Debug("server says", "message", strings.TrimSpace(m.Message))
		return nil, nil
	case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
		"window/showMessageRequest", "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh",
		"workspace/codeLens/refresh", "workspace/diagnostic/refresh", "workspace/inlineValue/refresh":
		return nil, nil
	case "workspace/configuration":
		return c.configuration(params), nil
	case "workspace/workspaceFolders":
		return []map[string]any{{"uri": URI(c.cfg.Dir), "name": filepath.Base(c.cfg.Dir)}}, nil
	case "window/showDocument":
		return map[string]any{"success": false}, nil
	case "workspace/applyEdit":
		return map[string]any{"applied": false, "failureReason": "gemkit does not apply a language server's edits"}, nil
	}
	return nil, errMethodNotFound
}

// errMethodNotFound answers a request gemkit does not serve.
var errMethodNotFound = errors.New("method not found")

// configuration answers workspace/configuration: for each item, the
// value at its dotted section in Settings (null when absent).
func (c *Client) configuration(params json.RawMessage) []any {
	var p struct {
		Items []struct {
			Section string `json:"section"`
		} `json:"items"`
	}
	json.Unmarshal(params, &p)
	var settings any
	if len(c.cfg.Settings) > 0 {
		json.Unmarshal(c.cfg.Settings, &settings)
	}
	out := make([]any, len(p.Items))
	for i, it := range p.Items {
		v := settings
		if it.Section != "" {
			for _, part := range strings.Split(it.Section, ".") {
				m, ok := v.(map[string]any)
				if !ok {
					v = nil
					break
				}
				v = m[part]
			}
		}
		out[i] = v
	}
	return out
}

func (c *Client) publish(params json.RawMessage) {
	var p publishParams
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	path := PathOf(p.URI)
	if path == "" {
		return
	}
	ds := make([]codeintel.Diagnostic, 0, len(p.Diagnostics))
	for _, d := range p.Diagnostics {
		ds = append(ds, d.diagnostic())
	}
	c.mu.Lock()
	c.seq++
	c.diags[path] = published{version: p.Version, diags: ds, seq: c.seq}
	if _, ok := c.unanswered[path]; ok {
		delete(c.unanswered, path)
		if len(c.unanswered) == 0 {
			c.answeredSeq = c.seq
		}
	}
	delete(c.pulled, path)
	c.lastPub = time.Now()
	c.signalLocked()
	c.mu.Unlock()
}

func (c *Client) onProgress(params json.RawMessage) {
	var p progressParams
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	tok := string(p.Token)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p.Value.Kind {
	case "begin":
		c.progress[tok] = progressText(p.Value.Title, p.Value.Message, p.Value.Percentage)
	case "report":
		if old, ok := c.progress[tok]; ok {
			title, _, _ := strings.Cut(old, ": ")
			c.progress[tok] = progressText(title, p.Value.Message, p.Value.Percentage)
		}
	case "end":
		delete(c.progress, tok)
	}
	c.signalLocked()
}

func progressText(title, msg string, pct *int) string {
	s := strings.TrimSpace(title)
	if m := strings.TrimSpace(msg); m != "" {
		if s != "" {
			s += ": "
		}
		s += m
	}
	if pct != nil {
		s += fmt.Sprintf(" (%d%%)", *pct)
	}
	return s
}

// signalLocked wakes everyone waiting for a publish or a progress change.
func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Name is the server's name.
func (c *Client) Name() string { return c.cfg.Name }

// Done is closed when the server's process has exited; Err then says
// why.
func (c *Client) Done() <-chan struct{} { return c.exited }

// Err is why the server exited (nil while it runs).
func (c *Client) Err() error {
	select {
	case <-c.exited:
		return c.exitErr
	default:
		return nil
	}
}

// Pid is the server's process id.
func (c *Client) Pid() int { return c.proc.Pid() }

// Indexing says what the server reports it is busy with (its
// work-done progress: "Setting up workspace: Loading packages..."), or
// "".
func (c *Client) Indexing() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, p := range c.progress {
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Offers reports whether the server offers a capability
// ("callHierarchyProvider").
func (c *Client) Offers(name string) bool { return c.caps.offers(name) }

// request sends a request bounded by RequestTimeout. A server that
// answers ContentModified (its view changed under the request, as gopls
// does while it loads) is asked once more.
func (c *Client) request(ctx context.Context, method string, params, result any) error {
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		err := c.rpc.call(rctx, method, params, result)
		cancel()
		if errorCode(err) == jsonrpc.CodeContentModified && attempt == 0 {
			continue
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errClosed):
			<-c.exited
			return &codeintel.ServerError{Server: c.cfg.Name, Reason: c.exitErr.Error()}
		case rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
			return fmt.Errorf("%s did not answer %s within %v", c.cfg.Name, method, c.cfg.RequestTimeout)
		}
		return err
	}
}

// Shutdown asks the server to exit (shutdown, then exit), and kills its
// process group when it does not within a few seconds or ctx ends.
func (c *Client) Shutdown(ctx context.Context) {
	select {
	case <-c.exited:
		return
	default:
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.rpc.call(sctx, "shutdown", nil, nil); err == nil {
		c.rpc.notify("exit", nil)
	}
	select {
	case <-c.exited:
	case <-sctx.Done():
	}
	c.kill()
	<-c.exited
}

// kill ends the server's whole process group (a server's own children,
// such as tsserver or go list, with it).
func (c *Client) kill() { c.proc.Kill() }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, []byte("?")))
}

// lastLines is the last n lines of s, joined with " | ".
func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	for i := range ls {
		ls[i] = strings.TrimSpace(ls[i])
	}
	out := strings.Join(ls, " | ")
	if len(out) > 600 {
		out = out[len(out)-600:]
	}
	return out
}

var _ io.Writer = (*tail)(nil)
