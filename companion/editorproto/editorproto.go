// Package editorproto is the [editor protocol] of `gemkit ide serve --editor
// stdio`: newline-delimited [JSON-RPC 2.0] between gemkit and the editor
// that spawned it, over gemkit's stdin (editor → gemkit) and stdout
// (gemkit → editor). A [Conn] is the companion's
// [github.com/gemkit/gemkit/companion.Editor]; what the editor reports
// ([MethodFocus], [MethodSelection], [MethodDiffAccepted], …) is passed to
// the companion's [github.com/gemkit/gemkit/companion.Events], and
// [Conn.Serve] runs a companion's whole life with the editor. The
// [editor protocol] document (docs/editor-protocol.md) describes the
// messages for plugin authors; its transcripts are this package's tests.
//
// [editor protocol]: https://github.com/gemkit/gemkit/blob/main/docs/editor-protocol.md
// [JSON-RPC 2.0]: https://www.jsonrpc.org/specification
package editorproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Method names of the protocol.
const (
	// Editor → gemkit notifications.
	MethodFocus           = "editor/focus"
	MethodSelection       = "editor/selection"
	MethodClose           = "editor/close"
	MethodRename          = "editor/rename"
	MethodDelete          = "editor/delete"
	MethodWorkspaceUpdate = "workspace/update"
	MethodDiffAccepted    = "diff/accepted"
	MethodDiffRejected    = "diff/rejected"
	MethodMention         = "editor/mention"

	// Gemkit → editor requests.
	MethodDiffOpen  = "diff/open"
	MethodDiffClose = "diff/close"
	// MethodDiagnostics is optional for plugins: one that answers
	// "method not found" reports no diagnostics.
	MethodDiagnostics = "diagnostics/get"

	// Gemkit → editor notifications.
	MethodServerReady = "server/ready"
	MethodFileWritten = "file/written"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = jsonrpc.CodeParseError
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound
	CodeInvalidParams  = jsonrpc.CodeInvalidParams
	CodeInternalError  = jsonrpc.CodeInternalError
)

// DefaultRequestTimeout bounds a request to the editor when [Options] leaves
// it zero.
const DefaultRequestTimeout = 30 * time.Second

// DefaultMaxLine is the longest line accepted from the editor: room for a
// diff's content at the request-body limit, escaped.
const DefaultMaxLine = jsonrpc.DefaultMaxMessage

// Options tunes a [Conn]; the zero value is usable.
type Options struct {
	// Logger receives protocol errors; default slog.Default(). It must not
	// write to the protocol's stdout.
	Logger *slog.Logger
	// RequestTimeout bounds each request to the editor; default
	// [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// MaxLine is the longest line read; default [DefaultMaxLine].
	MaxLine int
}

// Ready is the params of server/ready ([MethodServerReady]).
type Ready struct {
	Port          int               `json:"port"`
	DiscoveryFile string            `json:"discoveryFile"`
	Env           map[string]string `json:"env"`
	// Endpoints lists every way an agent finds this companion, for a
	// plugin's status command to show; older plugins ignore it.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint is one agent's way to the companion: the port it dials and the
// file it finds the port in (Gemini CLI's discovery file, Claude Code's
// and Qwen Code's lock files).
type Endpoint struct {
	// Agent is the program as a person knows it: companion.AgentGemini,
	// AgentClaude or AgentQwen.
	Agent string `json:"agent"`
	Port  int    `json:"port"`
	File  string `json:"file"`
}

// Endpoints lists the endpoints srv serves, Gemini CLI's first.
func Endpoints(srv *companion.Server) []Endpoint {
	out := []Endpoint{{Agent: companion.AgentGemini, Port: srv.Port(), File: srv.DiscoveryPath()}}
	if p := srv.ClaudeLockPath(); p != "" {
		out = append(out, Endpoint{Agent: companion.AgentClaude, Port: srv.ClaudePort(), File: p})
	}
	if p := srv.QwenLockPath(); p != "" {
		out = append(out, Endpoint{Agent: companion.AgentQwen, Port: srv.Port(), File: p})
	}
	return out
}

// diffOpen is the params of diff/open: the openDiff tool's arguments and,
// when the companion knows it, the agent that proposed the change.
type diffOpen struct {
	FilePath   string `json:"filePath"`
	NewContent string `json:"newContent"`
	Agent      string `json:"agent,omitempty"`
}

// Error is a JSON-RPC error, as the editor answers a request with one
// ("editor error -32000: …").
type Error = jsonrpc.Error

// ErrClosed is returned by requests once the editor's stream has ended.
var ErrClosed = errors.New("editor connection closed")

// Conn is one editor on a pair of streams.
type Conn struct {
	rpc     *jsonrpc.Conn
	log     *slog.Logger
	timeout time.Duration
}

var _ companion.Editor = (*Conn)(nil)

// New makes a [Conn] reading the editor's messages from r and writing
// gemkit's to w. Call [Conn.Run] or [Conn.Serve] to start reading.
func New(r io.Reader, w io.Writer, o Options) *Conn {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	rpc := jsonrpc.NewConn(r, w, jsonrpc.Options{
		Framer:     jsonrpc.LineFramer(),
		MaxMessage: o.MaxLine,
		Logger:     o.Logger,
		LogPrefix:  "editor protocol: ",
		Peer:       "editor",
		ErrClosed:  ErrClosed,
		Wording: jsonrpc.Wording{NotObject: func(batch bool) string {
			msg := "Invalid Request: each line must hold one JSON-RPC object"
			if batch {
				msg += "; batches are not supported"
			}
			return msg
		}},
	})
	return &Conn{rpc: rpc, log: o.Logger, timeout: o.RequestTimeout}
}

// Done is closed when [Conn.Run] has returned: the editor is gone.
func (c *Conn) Done() <-chan struct{} { return c.rpc.Done() }

// Run reads the editor's messages and passes its reports to ev
// ([companion.Events]) until the editor closes its end (then Run returns
// nil) or ctx ends. A malformed line is answered with a JSON-RPC error (or
// logged, for a notification) and reading goes on. Once Run has returned no
// further report reaches ev, except from a line whose handling had already
// begun.
func (c *Conn) Run(ctx context.Context, ev companion.Events) error {
	err := c.rpc.Run(ctx, jsonrpc.HandlerFunc(func(_ context.Context, r jsonrpc.Request) (any, error) {
		return c.handleCall(r, ev)
	}))
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("editor protocol: %w", err)
}

// handleCall applies an editor notification. The same methods may come as
// requests (with an id); those get {} or an error back.
func (c *Conn) handleCall(r jsonrpc.Request, ev companion.Events) (any, error) {
	err := c.apply(r.Method, r.Params, ev)
	if err == nil {
		if r.IsNotification() {
			return nil, nil // no answer to make
		}
		return json.RawMessage(`{}`), nil
	}
	var rpcErr *Error
	if !errors.As(err, &rpcErr) {
		rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
	}
	c.log.Error("editor protocol: "+r.Method+" failed", "err", rpcErr.Message)
	return nil, rpcErr
}

func invalidParams(method, why string) error { return jsonrpc.InvalidParams(method, why) }

type cursorParam struct {
	Line      *int `json:"line"`
	Character *int `json:"character"`
}

func (p *cursorParam) cursor(method string) (*ide.Cursor, error) {
	if p == nil {
		return nil, nil
	}
	if p.Line == nil || p.Character == nil || *p.Line < 1 || *p.Character < 1 {
		return nil, invalidParams(method, "cursor needs line and character, both 1-based")
	}
	return &ide.Cursor{Line: *p.Line, Character: *p.Character}, nil
}

func decodeParams(method string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return invalidParams(method, "params are required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams(method, jsonrpc.Problem(err))
	}
	return nil
}

func absPath(method, field, p string) error {
	if p == "" {
		return invalidParams(method, field+" is required")
	}
	if !filepath.IsAbs(p) {
		return invalidParams(method, fmt.Sprintf("%s must be an absolute path, not %q", field, p))
	}
	return nil
}

// apply hands one editor message to ev, after checking its params the
// way the protocol states them; an unknown method is the JSON-RPC
// "method not found".
func (c *Conn) apply(method string, raw json.RawMessage, ev companion.Events) error {
	switch method {
	case MethodFocus, MethodSelection:
		return applyFocus(method, raw, ev)
	case MethodClose, MethodDelete:
		return applyPathEvent(method, raw, ev)
	case MethodRename:
		return applyRename(method, raw, ev)
	case MethodWorkspaceUpdate:
		return applyWorkspaceUpdate(method, raw, ev)
	case MethodDiffAccepted:
		return applyDiffAccepted(method, raw, ev)
	case MethodDiffRejected:
		return applyDiffRejected(method, raw, ev)
	case MethodMention:
		return applyMention(method, raw, ev)
	default:
		return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
	}
}

// applyFocus reports the file the editor focused or a selection in it;
// a selection must say where its cursor is.
func applyFocus(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		Path         string       `json:"path"`
		Cursor       *cursorParam `json:"cursor"`
		SelectedText *string      `json:"selectedText"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if err := absPath(method, "path", p.Path); err != nil {
		return err
	}
	cur, err := p.Cursor.cursor(method)
	if err != nil {
		return err
	}
	sel := ""
	if p.SelectedText != nil {
		sel = *p.SelectedText
	}
	if method == MethodFocus {
		ev.Focus(p.Path, cur, sel)
		return nil
	}
	if cur == nil {
		return invalidParams(method, "cursor is required")
	}
	ev.Selection(p.Path, *cur, sel)
	return nil
}

// applyPathEvent reports a file the editor closed or deleted.
func applyPathEvent(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		Path string `json:"path"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if err := absPath(method, "path", p.Path); err != nil {
		return err
	}
	if method == MethodClose {
		ev.Close(p.Path)
	} else {
		ev.Delete(p.Path)
	}
	return nil
}

// applyRename reports a file the editor renamed; both paths are
// absolute.
func applyRename(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		OldPath string `json:"oldPath"`
		NewPath string `json:"newPath"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if err := absPath(method, "oldPath", p.OldPath); err != nil {
		return err
	}
	if err := absPath(method, "newPath", p.NewPath); err != nil {
		return err
	}
	ev.Rename(p.OldPath, p.NewPath)
	return nil
}

// applyWorkspaceUpdate hands new workspace folders and trust to ev. A
// folder ev refuses is the editor's error; one ev cannot record (a full
// or read-only disk) is gemkit's.
func applyWorkspaceUpdate(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		Paths   *[]string `json:"paths"`
		Trusted *bool     `json:"trusted"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	var paths []string
	if p.Paths != nil {
		paths = append([]string{}, *p.Paths...)
		for _, ws := range paths {
			if err := absPath(method, "paths[]", ws); err != nil {
				return err
			}
		}
	}
	if err := ev.UpdateWorkspace(paths, p.Trusted); err != nil {
		var bad *companion.InvalidWorkspaceError
		if errors.As(err, &bad) {
			return invalidParams(method, err.Error())
		}
		// The folders were fine; gemkit could not apply them (a
		// full or read-only disk under the discovery file).
		return &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error for %s: %v", method, err)}
	}
	return nil
}

// applyDiffAccepted reports a diff the person accepted, with the
// content as they left it.
func applyDiffAccepted(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		FilePath string  `json:"filePath"`
		Content  *string `json:"content"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if p.FilePath == "" {
		return invalidParams(method, "filePath is required")
	}
	if p.Content == nil {
		return invalidParams(method, "content (a string) is required")
	}
	ev.DiffAccepted(p.FilePath, *p.Content)
	return nil
}

// applyDiffRejected reports a diff the person rejected.
func applyDiffRejected(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		FilePath string `json:"filePath"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if p.FilePath == "" {
		return invalidParams(method, "filePath is required")
	}
	ev.DiffRejected(p.FilePath)
	return nil
}

// applyMention reports a file, or a range of its lines, the person
// pointed the agent at; an editor's Events that take no mentions drop
// it.
func applyMention(method string, raw json.RawMessage, ev companion.Events) error {
	var p struct {
		Path      string `json:"path"`
		LineStart *int   `json:"lineStart"`
		LineEnd   *int   `json:"lineEnd"`
	}
	if err := decodeParams(method, raw, &p); err != nil {
		return err
	}
	if err := absPath(method, "path", p.Path); err != nil {
		return err
	}
	start, end := 0, 0
	if p.LineStart != nil {
		start = *p.LineStart
		end = start
		if p.LineEnd != nil {
			end = *p.LineEnd
		}
		if start < 1 || end < start {
			return invalidParams(method, "lineStart and lineEnd are 1-based, with lineEnd at least lineStart")
		}
	} else if p.LineEnd != nil {
		return invalidParams(method, "lineEnd needs lineStart")
	}
	if m, ok := ev.(companion.Mentions); ok {
		m.Mention(p.Path, start, end)
	}
	return nil
}

// Notify sends a notification to the editor.
func (c *Conn) Notify(method string, params any) error { return c.rpc.Notify(method, params) }

// Call sends a request to the editor and waits for its answer, at most
// the request timeout. result may be nil.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.rpc.Call(ctx, c.timeout, method, params, result)
}

// OpenDiff implements [companion.Editor] with a diff/open request, which
// names the agent that proposed the change ([companion.ProposedBy]) when
// it is known.
func (c *Conn) OpenDiff(ctx context.Context, filePath, newContent string) error {
	return c.Call(ctx, MethodDiffOpen, diffOpen{FilePath: filePath, NewContent: newContent, Agent: companion.ProposedBy(ctx)}, nil)
}

// CloseDiff implements [companion.Editor] with a diff/close request; a null
// or missing content means no diff of filePath was open.
func (c *Conn) CloseDiff(ctx context.Context, filePath string) (string, bool, error) {
	var res struct {
		Content *string `json:"content"`
	}
	if err := c.Call(ctx, MethodDiffClose, map[string]string{"filePath": filePath}, &res); err != nil {
		return "", false, err
	}
	if res.Content == nil {
		return "", false, nil
	}
	return *res.Content, true, nil
}

// Diagnostics implements companion.DiagnosticsEditor with a
// diagnostics/get request ({"path": ...}, or {} for every file); an
// editor that does not know the method has no diagnostics to report.
func (c *Conn) Diagnostics(ctx context.Context, path string) ([]companion.FileDiagnostics, error) {
	params := map[string]string{}
	if path != "" {
		params["path"] = path
	}
	var res struct {
		Files []companion.FileDiagnostics `json:"files"`
	}
	err := c.Call(ctx, MethodDiagnostics, params, &res)
	var rpcErr *Error
	if errors.As(err, &rpcErr) && rpcErr.Code == CodeMethodNotFound {
		return []companion.FileDiagnostics{}, nil
	}
	if err != nil {
		return nil, err
	}
	return res.Files, nil
}

// FileWritten implements [companion.Editor] with a file/written notification.
func (c *Conn) FileWritten(_ context.Context, path string) error {
	return c.Notify(MethodFileWritten, map[string]string{"path": path})
}

// SendReady tells the editor where the companion serves, once the
// discovery file exists.
func (c *Conn) SendReady(r Ready) error {
	if r.Env == nil {
		r.Env = map[string]string{}
	}
	return c.Notify(MethodServerReady, r)
}
