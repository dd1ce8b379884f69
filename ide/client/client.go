// Package client is the CLI side of Gemini CLI's IDE mode: it finds the
// editor a terminal runs in, chooses its companion's discovery file with the
// real CLI's rules, connects over MCP (Streamable HTTP or stdio), keeps the
// editor's context and drives diffs in the editor. It follows IdeClient in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts and the helpers next
// to it (ide-connection-utils.ts, process-utils.ts, detect-ide.ts,
// ideContext.ts); "the real client" in this package's comments is that code.
//
// It works with any companion (ours, the official VS Code one, a JetBrains
// one). The MCP SDK it uses stays inside the package.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gemkit/gemkit/ide"
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
	// ErrDiffTimeout: no answer within Options.DiffTimeout. The error a
	// wait returns matches it with errors.Is and names the timeout.
	ErrDiffTimeout = errors.New("no answer to the diff within the diff timeout")
)

// diffTimeoutError is ErrDiffTimeout with the timeout that ran out.
type diffTimeoutError struct{ after time.Duration }

func (e diffTimeoutError) Error() string {
	s := e.after.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s") // 10m, not 10m0s
	}
	return "no answer to the diff within " + s
}

func (e diffTimeoutError) Is(target error) bool { return target == ErrDiffTimeout }

// DiffOutcome is how a diff ended in the editor.
type DiffOutcome struct {
	// Accepted is false when the person rejected or closed the diff.
	Accepted bool
	// Content is the accepted text, with the person's own edits.
	Content string
}

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

// start initialises the MCP session on the client's already started mcp-go
// client (set before, so that nothing races on it) and lists the tools, as
// the real client does right after connecting (discoverTools in gemini-cli
// 0.61.0 packages/core/src/ide/ide-client.ts).
func (c *Client) start(ctx context.Context, clientName, version string) error {
	mc := c.mc
	c.setState(Connecting, "")
	mc.OnNotification(c.handleNotification)
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = ide.ProtocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: version}
	res, err := mc.Initialize(ctx, req)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	c.server = ServerInfo{Name: res.ServerInfo.Name, Version: res.ServerInfo.Version, ProtocolVersion: res.ProtocolVersion, SessionID: mc.GetSessionId()}
	// Like the real client (discoverTools in ide-client.ts), a failing
	// tools/list only disables diffing.
	if lt, err := mc.ListTools(ctx, mcp.ListToolsRequest{}); err == nil {
		for _, t := range lt.Tools {
			schema, _ := json.Marshal(t.InputSchema)
			if len(t.RawInputSchema) > 0 {
				schema = t.RawInputSchema
			}
			c.tools = append(c.tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
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
	if c.mc != nil {
		_ = c.mc.Close()
	}
	if c.onClose != nil {
		c.onClose()
	}
}

// handleNotification receives every notification the companion sends,
// on the GET stream or inside a POST response.
func (c *Client) handleNotification(n mcp.JSONRPCNotification) {
	params, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	if c.observe != nil {
		c.observe(n.Method, params)
	}
	switch n.Method {
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
			c.log.Debug("ignoring malformed diff notification", "method", n.Method)
			return
		}
		c.resolve(*v.FilePath, DiffOutcome{})
	default:
		c.log.Debug("ignoring notification", "method", n.Method)
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

// resolve ends the pending diff of filePath, if any.
func (c *Client) resolve(filePath string, o DiffOutcome) {
	c.mu.Lock()
	ch, ok := c.pending[filePath]
	delete(c.pending, filePath)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("no pending diff", "file", filePath)
		return
	}
	ch <- o
}

// OpenDiff shows newContent against filePath in the editor and waits for the
// person's answer: accepted (with the final text, edits included) or
// rejected. Diffs run one at a time, as in the real client (acquireMutex in
// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts). It gives up after
// Options.DiffTimeout (ide.DiffTimeout by default), when ctx ends or when the
// connection is lost; it then closes the diff in the editor, best effort,
// before the next diff may start.
func (c *Client) OpenDiff(ctx context.Context, filePath, newContent string) (DiffOutcome, error) {
	d, err := c.StartDiff(ctx, filePath, newContent)
	if err != nil {
		return DiffOutcome{}, err
	}
	return d.Wait(ctx)
}

// PendingDiff is a diff the editor shows and has not answered yet. Its
// owner must call Wait or Abandon, which let the next diff start.
type PendingDiff struct {
	c        *Client
	path     string
	ch       chan DiffOutcome
	deadline *time.Timer
	once     sync.Once
}

// StartDiff asks the editor to show the diff and returns once the
// companion acknowledged it (openDiff answered), holding the client's
// one-diff lock until Wait or Abandon.
func (c *Client) StartDiff(ctx context.Context, filePath, newContent string) (*PendingDiff, error) {
	if !utf8.ValidString(newContent) {
		// JSON would carry U+FFFD in place of the bad bytes: the editor
		// would show, and the person accept, something else.
		return nil, fmt.Errorf("openDiff %s: the proposal is not valid UTF-8", filePath)
	}
	select {
	case c.diffSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.doneError()
	}
	if c.State().Status != Connected {
		<-c.diffSem
		return nil, ErrNotConnected
	}
	d := &PendingDiff{c: c, path: filePath, ch: make(chan DiffOutcome, 1), deadline: time.NewTimer(c.diffTimeout)}
	c.mu.Lock()
	c.pending[filePath] = d.ch
	c.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, c.diffTimeout)
	res, err := c.callTool(callCtx, ide.ToolOpenDiff, ide.OpenDiffRequest{FilePath: filePath, NewContent: newContent})
	timedOut := callCtx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			// The companion may have shown the diff before the call was
			// given up; do not leave it open in the editor.
			d.giveUp()
		} else {
			d.Abandon()
		}
		select {
		case <-c.done:
			return nil, c.doneError()
		default:
		}
		return nil, fmt.Errorf("openDiff %s: %w", filePath, err)
	}
	if res.IsError {
		d.Abandon()
		return nil, fmt.Errorf("openDiff %s: %s", filePath, toolErrorText(res, ide.ToolOpenDiff))
	}
	return d, nil
}

// Path is the diffed file.
func (d *PendingDiff) Path() string { return d.path }

// Wait waits for the person's answer; see OpenDiff.
func (d *PendingDiff) Wait(ctx context.Context) (DiffOutcome, error) {
	c := d.c
	select {
	case o := <-d.ch:
		d.release()
		return o, nil
	case <-ctx.Done():
		d.giveUp()
		return DiffOutcome{}, ctx.Err()
	case <-d.deadline.C:
		d.giveUp()
		return DiffOutcome{}, diffTimeoutError{c.diffTimeout}
	case <-c.done:
		d.Abandon()
		return DiffOutcome{}, c.doneError()
	}
}

// Abandon stops waiting without touching the editor and lets the next
// diff start.
func (d *PendingDiff) Abandon() {
	d.forget()
	d.release()
}

// giveUp stops waiting and closes the diff in the editor before it lets
// the next diff start: were the lock released first, a next diff of the
// same file could be shown and then closed by this closeDiff.
func (d *PendingDiff) giveUp() {
	d.forget()
	d.c.closeQuietly(d.path)
	d.release()
}

// forget removes the diff from the pending ones, so that a late answer
// is dropped.
func (d *PendingDiff) forget() {
	d.c.mu.Lock()
	if d.c.pending[d.path] == d.ch {
		delete(d.c.pending, d.path)
	}
	d.c.mu.Unlock()
}

func (d *PendingDiff) release() {
	d.once.Do(func() {
		d.deadline.Stop()
		<-d.c.diffSem
	})
}

// closeQuietly closes an abandoned diff in the editor, best effort.
func (c *Client) closeQuietly(filePath string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.CloseDiff(ctx, filePath); err != nil {
		c.log.Debug("closing abandoned diff", "file", filePath, "err", err)
	}
}

// CloseDiff closes the diff of filePath in the editor without an accept
// or reject notification and returns the right side's text; ok is false
// when the companion had no such diff ({"content": null}).
func (c *Client) CloseDiff(ctx context.Context, filePath string) (content string, ok bool, err error) {
	text, err := c.CloseDiffText(ctx, filePath)
	if err != nil {
		return "", false, err
	}
	return ParseCloseDiffText(text)
}

// CloseDiffText calls closeDiff and returns its first text block as sent
// (nil when there is none), for callers that judge its shape.
func (c *Client) CloseDiffText(ctx context.Context, filePath string) (*string, error) {
	return c.closeDiffText(ctx, ide.CloseDiffRequest{FilePath: filePath})
}

func (c *Client) closeDiffText(ctx context.Context, req ide.CloseDiffRequest) (*string, error) {
	res, err := c.callTool(ctx, ide.ToolCloseDiff, req)
	if err != nil {
		return nil, fmt.Errorf("closeDiff %s: %w", req.FilePath, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("closeDiff %s: %s", req.FilePath, toolErrorText(res, ide.ToolCloseDiff))
	}
	return firstText(res), nil
}

// ParseCloseDiffText reads the text block of a closeDiff result the way the
// real client does (IdeClient.closeDiff in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts): JSON whose "content" is the text (ok)
// or null or absent (not ok). Anything else is an error here, where the real
// client only logs it.
func ParseCloseDiffText(text *string) (content string, ok bool, err error) {
	if text == nil || *text == "" {
		return "", false, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*text), &v); err != nil || v == nil {
		return "", false, fmt.Errorf("closeDiff text is not a JSON object: %.80q", *text)
	}
	raw, has := v["content"]
	if !has || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &content); err != nil {
		return "", false, fmt.Errorf("closeDiff content is not a string: %.80s", raw)
	}
	return content, true, nil
}

// ResolveDiffFromCLI ends the pending diff of filePath from the CLI side, as
// the real client does when the person answers in the terminal
// (resolveDiffFromCli in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts): it closes the diff in the editor and
// resolves the waiting OpenDiff with outcome accepted (with the editor's
// text) or rejected. The diff stops being pending before closeDiff is sent,
// and closeDiff carries the deprecated suppressNotification as the real
// client's does, so that a companion that still announces the close cannot
// turn the person's answer into its own.
func (c *Client) ResolveDiffFromCLI(ctx context.Context, filePath string, accept bool) error {
	c.mu.Lock()
	ch, pending := c.pending[filePath]
	delete(c.pending, filePath)
	c.mu.Unlock()
	text, err := c.closeDiffText(ctx, ide.CloseDiffRequest{FilePath: filePath, SuppressNotification: true})
	var content string
	if err == nil {
		content, _, err = ParseCloseDiffText(text)
	}
	if pending {
		if accept {
			ch <- DiffOutcome{Accepted: true, Content: content}
		} else {
			ch <- DiffOutcome{}
		}
	}
	return err
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

func (c *Client) callTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	if c.mc == nil {
		return nil, ErrNotConnected
	}
	select {
	case <-c.done:
		return nil, c.doneError()
	default:
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.mc.CallTool(ctx, req)
}

func firstText(res *mcp.CallToolResult) *string {
	for _, part := range res.Content {
		if t, ok := mcp.AsTextContent(part); ok {
			s := t.Text
			return &s
		}
	}
	return nil
}

func toolErrorText(res *mcp.CallToolResult, tool string) string {
	if t := firstText(res); t != nil {
		return *t
	}
	return fmt.Sprintf("Tool '%s' reported an error.", tool)
}

// discardLogger is used when the caller gives none.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
