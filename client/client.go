// Package client is the CLI side of Gemini CLI's IDE mode: it finds the
// editor a terminal runs in, chooses its companion's discovery file with the
// real CLI's rules ([Discover]), connects over [MCP] (Streamable HTTP or
// stdio: [Connect], [Dial]), keeps the editor's context ([Client.Context],
// [Client.OnContext]) and drives diffs in the editor ([Client.OpenDiff],
// [Client.StartDiff], [Client.CloseDiff]). It follows [IdeClient] in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts and the helpers next
// to it (ide-connection-utils.ts, process-utils.ts, detect-ide.ts,
// ideContext.ts); "the real client" in this package's comments is that code.
// With [Options].Agent set to [AgentQwen] it follows [Qwen Code]'s client
// instead.
//
// It works with any companion that follows the [IDE companion spec] (ours,
// [github.com/gemkit/gemkit/companion]; the official VS Code one; a
// JetBrains one). [Inspect] and [Doctor] explain in words what the CLI
// would do and why (`gemkit ide status`, `gemkit ide doctor`), and [Bridge]
// relays MCP on stdio to a companion's port (`gemkit ide bridge`). It
// speaks MCP through internal/mcpclient, which keeps the MCP SDK. docs/ide-client.md describes the
// commands built on it.
//
// [IdeClient]: https://github.com/google-gemini/gemini-cli/tree/v0.61.0/packages/core/src/ide/ide-client.ts
// [IDE companion spec]: https://geminicli.com/docs/ide-integration/ide-companion-spec
// [MCP]: https://modelcontextprotocol.io/specification/2025-06-18
// [Qwen Code]: https://github.com/QwenLM/qwen-code
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// Status is the connection status, named as the real client names it
// (IDEConnectionStatus in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts).
type Status string

// The connection statuses.
const (
	Disconnected Status = "disconnected"
	Connecting   Status = "connecting"
	Connected    Status = "connected"
)

// State is the connection status with the words shown to a person.
type State struct {
	Status  Status `json:"status"`
	Details string `json:"details,omitempty"`
}

// Errors a caller may want to tell apart.
var (
	// ErrNotConnected: the client has no live connection.
	ErrNotConnected = errors.New("IDE client is not connected")
	// ErrDisconnected: the connection was lost while waiting.
	ErrDisconnected = errors.New("the connection to the IDE companion was lost")
	// ErrClosed: Close was called while waiting.
	ErrClosed = errors.New("the IDE client was closed")
	// ErrDiffTimeout: no answer within [Options.DiffTimeout]. The error a
	// wait returns matches it with errors.Is and names the timeout.
	ErrDiffTimeout = errors.New("no answer to the diff within the diff timeout")
)

// ServerInfo is what the companion said about itself at initialize.
type ServerInfo struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocolVersion"`
	SessionID       string `json:"sessionId,omitempty"`
}

// Client is a connection to one companion. It is safe for concurrent use.
type Client struct {
	mc       *mcpclient.Client
	endpoint Endpoint
	log      *slog.Logger
	server   ServerInfo
	tools    []Tool
	onClose  func() // releases the transport's own resources
	observe  func(method string, params json.RawMessage)

	diffSem     chan struct{} // one diff at a time, as in the real client (acquireMutex)
	diffTimeout time.Duration

	mu         sync.Mutex
	state      State
	ideContext *ide.Context
	gotContext chan struct{} // closed at the first context update
	pending    map[string]chan DiffOutcome
	done       chan struct{} // closed when the client disconnects
	doneErr    error
	nextSub    int
	stateSubs  map[int]func(State)
	ctxSubs    map[int]func(*ide.Context)
	trustSubs  map[int]func(bool)
	noStream   bool // the server refused the GET stream (405)

	dispatchMu sync.Mutex // keeps subscriber calls in arrival order
}

// Tool is one tool the companion lists.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

func newClient(ep Endpoint, o Options) *Client {
	log, onState := o.Logger, o.OnState
	c := &Client{
		observe:     o.Observe,
		endpoint:    ep,
		log:         log,
		diffSem:     make(chan struct{}, 1),
		diffTimeout: o.DiffTimeout,
		state:       State{Status: Disconnected},
		gotContext:  make(chan struct{}),
		pending:     map[string]chan DiffOutcome{},
		done:        make(chan struct{}),
		stateSubs:   map[int]func(State){},
		ctxSubs:     map[int]func(*ide.Context){},
		trustSubs:   map[int]func(bool){},
	}
	if c.diffTimeout <= 0 {
		c.diffTimeout = ide.DiffTimeout
	}
	if onState != nil {
		c.stateSubs[0] = onState
		c.nextSub = 1
	}
	return c
}

// start connects with dial, which initialises the MCP session with the
// client's notification handler, and lists the tools, as the real client
// does right after connecting (discoverTools in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts).
func (c *Client) start(ctx context.Context, o Options, dial func(context.Context, mcpclient.Options) (*mcpclient.Client, error)) error {
	c.setState(Connecting, "")
	mc, err := dial(ctx, mcpclient.Options{
		Name:            o.ClientName,
		Version:         o.ClientVersion,
		ProtocolVersion: o.ProtocolVersion,
		Notify:          c.handleNotification,
		Logger:          slog.New(demoted{c.log.Handler()}),
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	c.mu.Lock()
	c.mc = mc
	c.mu.Unlock()
	name, version, protocol := mc.Server()
	c.server = ServerInfo{Name: name, Version: version, ProtocolVersion: protocol, SessionID: mc.SessionID()}
	// Like the real client (discoverTools in ide-client.ts), a failing
	// tools/list only disables diffing.
	if tools, err := mc.ListTools(ctx); err == nil {
		for _, t := range tools {
			c.tools = append(c.tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		}
	} else {
		c.log.Debug("tools/list failed; diffing disabled", "err", err)
	}
	c.setState(Connected, "")
	return nil
}

// Endpoint is how the client reached the companion.
func (c *Client) Endpoint() Endpoint { return c.endpoint }

// Server is what the companion said about itself.
func (c *Client) Server() ServerInfo { return c.server }

// Tools are the tools the companion listed at connect.
func (c *Client) Tools() []Tool { return append([]Tool(nil), c.tools...) }

// DiffingEnabled reports, like the real client (isDiffingEnabled in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts), whether the client
// is connected and the companion lists both openDiff and closeDiff.
func (c *Client) DiffingEnabled() bool {
	if c.State().Status != Connected {
		return false
	}
	var open, closeTool bool
	for _, t := range c.tools {
		open = open || t.Name == ide.ToolOpenDiff
		closeTool = closeTool || t.Name == ide.ToolCloseDiff
	}
	return open && closeTool
}

// NotificationStream reports whether the companion accepted the GET
// stream that carries its notifications. A companion that answers 405
// leaves the client connected but deaf: diffs never resolve.
func (c *Client) NotificationStream() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.noStream
}

// State is the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Done is closed when the client is disconnected, by Close or because
// the connection was lost.
func (c *Client) Done() <-chan struct{} { return c.done }

// Context is the editor's context as last received and normalised, or
// nil before the first update and after a disconnect.
func (c *Client) Context() *ide.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ideContext == nil {
		return nil
	}
	cp := NormalizeContext(*c.ideContext) // a deep copy of a normalised value
	return &cp
}

// WaitContext waits for the first context update and returns the
// current context.
func (c *Client) WaitContext(ctx context.Context) (*ide.Context, error) {
	select {
	case <-c.gotContext:
		if cur := c.Context(); cur != nil {
			return cur, nil
		}
		return nil, ErrDisconnected
	case <-c.done:
		return nil, c.doneError()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// OnStateChange calls fn on every state change until the returned
// function is called. fn runs on the client's goroutine, in order with
// the other subscribers; it must not block, nor call Close (hand that to
// another goroutine).
func (c *Client) OnStateChange(fn func(State)) (remove func()) {
	return subscribe(c, c.stateSubs, fn)
}

// OnContext calls fn with every normalised context update (nil when the
// context is cleared at disconnect) until the returned function is called.
// The rules of OnStateChange apply to fn.
func (c *Client) OnContext(fn func(*ide.Context)) (remove func()) {
	return subscribe(c, c.ctxSubs, fn)
}

// OnTrustChange calls fn whenever an update carries workspaceState.isTrusted,
// as the real client's trust listeners (addTrustChangeListener in gemini-cli
// 0.61.0 packages/core/src/ide/ide-client.ts).
func (c *Client) OnTrustChange(fn func(bool)) (remove func()) {
	return subscribe(c, c.trustSubs, fn)
}

func subscribe[F any](c *Client, m map[int]F, fn F) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextSub
	c.nextSub++
	m[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(m, id)
	}
}

func values[F any](m map[int]F) []F {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]F, 0, len(ids))
	for _, id := range ids {
		out = append(out, m[id])
	}
	return out
}

// setState records a new state and tells the subscribers. Like the real
// client, a second "disconnected" keeps the first one's details, and a
// disconnect clears the context.
func (c *Client) setState(s Status, details string) {
	c.dispatchMu.Lock()
	defer c.dispatchMu.Unlock()
	c.mu.Lock()
	if c.state.Status == Disconnected && s == Disconnected && c.mc != nil && c.isDone() {
		c.mu.Unlock()
		return
	}
	c.state = State{Status: s, Details: details}
	st := c.state
	subs := values(c.stateSubs)
	var ctxSubs []func(*ide.Context)
	if s == Disconnected {
		if c.ideContext != nil {
			ctxSubs = values(c.ctxSubs)
		}
		c.ideContext = nil
		if !c.isDone() {
			close(c.done)
		}
	}
	c.mu.Unlock()
	for _, fn := range subs {
		fn(st)
	}
	for _, fn := range ctxSubs {
		fn(nil)
	}
}

// isDone reports whether done is closed; c.mu must be held.
func (c *Client) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *Client) doneError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doneErr != nil {
		return c.doneErr
	}
	return ErrDisconnected
}

// lost marks the connection lost, with the real client's words (setState in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts).
func (c *Client) lost(err error) {
	c.mu.Lock()
	if c.isDone() {
		c.mu.Unlock()
		return
	}
	if c.doneErr == nil {
		c.doneErr = fmt.Errorf("%w: %v", ErrDisconnected, err)
	}
	c.mu.Unlock()
	c.log.Debug("IDE connection lost", "err", err)
	c.setState(Disconnected, "IDE connection error. The connection was lost unexpectedly. Please try reconnecting by running /ide enable\n"+err.Error())
	go c.release()
}

// release closes the MCP client and the transport once.
func (c *Client) release() {
	c.mu.Lock()
	mc := c.mc
	c.mu.Unlock()
	if mc != nil {
		_ = mc.Close()
	}
	if c.onClose != nil {
		c.onClose()
	}
}

// handleNotification receives every notification the companion sends,
// on the GET stream or inside a POST response.
func (c *Client) handleNotification(method string, params json.RawMessage) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if c.observe != nil {
		c.observe(method, params)
	}
	switch method {
	case ide.MethodContextUpdate:
		var v ide.Context
		if err := json.Unmarshal(params, &v); err != nil {
			c.log.Debug("ignoring malformed context update", "err", err)
			return
		}
		c.setContext(v)
	case ide.MethodDiffAccepted:
		var v struct {
			FilePath *string `json:"filePath"`
			Content  *string `json:"content"`
		}
		if json.Unmarshal(params, &v) != nil || v.FilePath == nil || v.Content == nil {
			c.log.Debug("ignoring malformed diffAccepted", "params", len(params))
			return
		}
		c.resolve(*v.FilePath, DiffOutcome{Accepted: true, Content: *v.Content})
	case ide.MethodDiffRejected, ide.MethodDiffClosed:
		var v struct {
			FilePath *string `json:"filePath"`
		}
		if json.Unmarshal(params, &v) != nil || v.FilePath == nil {
			c.log.Debug("ignoring malformed diff notification", "method", method)
			return
		}
		c.resolve(*v.FilePath, DiffOutcome{})
	default:
		c.log.Debug("ignoring notification", "method", method)
	}
}

func (c *Client) setContext(v ide.Context) {
	norm := NormalizeContext(v)
	c.dispatchMu.Lock()
	defer c.dispatchMu.Unlock()
	c.mu.Lock()
	if c.isDone() {
		c.mu.Unlock()
		return
	}
	c.ideContext = &norm
	select {
	case <-c.gotContext:
	default:
		close(c.gotContext)
	}
	ctxSubs, trustSubs := values(c.ctxSubs), values(c.trustSubs)
	c.mu.Unlock()
	for _, fn := range ctxSubs {
		cp := NormalizeContext(norm)
		fn(&cp)
	}
	if norm.WorkspaceState != nil && norm.WorkspaceState.IsTrusted != nil {
		for _, fn := range trustSubs {
			fn(*norm.WorkspaceState.IsTrusted)
		}
	}
}

// Close ends the connection: like the real client (disconnect in gemini-cli
// 0.61.0 packages/core/src/ide/ide-client.ts) it first closes every pending
// diff in the editor; waiting OpenDiff calls return ErrClosed (never an
// outcome a companion might announce for those closes).
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.isDone() {
		c.mu.Unlock()
		c.release()
		return nil
	}
	paths := make([]string, 0, len(c.pending))
	for p := range c.pending {
		paths = append(paths, p)
	}
	c.pending = map[string]chan DiffOutcome{}
	c.mu.Unlock()
	sort.Strings(paths)
	for _, p := range paths {
		if _, _, err := c.CloseDiff(ctx, p); err != nil {
			c.log.Debug("closing pending diff", "file", p, "err", err)
		}
	}
	c.mu.Lock()
	if c.doneErr == nil {
		c.doneErr = ErrClosed
	}
	c.mu.Unlock()
	c.setState(Disconnected, "IDE integration disabled. To enable it again, run /ide enable.")
	c.release()
	return nil
}

func (c *Client) callTool(ctx context.Context, name string, args any) (*mcpclient.Result, error) {
	c.mu.Lock()
	mc := c.mc
	c.mu.Unlock()
	if mc == nil {
		return nil, ErrNotConnected
	}
	select {
	case <-c.done:
		return nil, c.doneError()
	default:
	}
	return mc.CallTool(ctx, name, args)
}

func firstText(res *mcpclient.Result) *string {
	if len(res.Texts) > 0 {
		s := res.Texts[0]
		return &s
	}
	return nil
}

func toolErrorText(res *mcpclient.Result, tool string) string {
	if t := firstText(res); t != nil {
		return *t
	}
	return fmt.Sprintf("Tool '%s' reported an error.", tool)
}

// discardLogger is used when the caller gives none.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
