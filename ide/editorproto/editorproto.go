// Package editorproto is the editor protocol of `gemkit ide serve --editor
// stdio`: newline-delimited JSON-RPC 2.0 between gemkit and the editor that
// spawned it, over gemkit's stdin (editor → gemkit) and stdout (gemkit →
// editor). A Conn is the companion's Editor; what the editor reports is
// passed to the companion's Events. docs/editor-protocol.md describes the
// messages for plugin authors.
package editorproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/companion"
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
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// DefaultRequestTimeout bounds a request to the editor when Options leaves
// it zero.
const DefaultRequestTimeout = 30 * time.Second

// DefaultMaxLine is the longest line accepted from the editor: room for a
// diff's content at the request-body limit, escaped.
const DefaultMaxLine = 4 * ide.MaxRequestBody

// Options tunes a Conn; the zero value is usable.
type Options struct {
	// Logger receives protocol errors; default slog.Default(). It must not
	// write to the protocol's stdout.
	Logger *slog.Logger
	// RequestTimeout bounds each request to the editor; default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxLine is the longest line read; default DefaultMaxLine.
	MaxLine int
}

// Ready is the params of server/ready.
type Ready struct {
	Port          int               `json:"port"`
	DiscoveryFile string            `json:"discoveryFile"`
	Env           map[string]string `json:"env"`
}

// Error is a JSON-RPC error, as the editor answers a request with one.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("editor error %d: %s", e.Code, e.Message) }

// ErrClosed is returned by requests once the editor's stream has ended.
var ErrClosed = errors.New("editor connection closed")

// Conn is one editor on a pair of streams.
type Conn struct {
	r       io.Reader
	w       io.Writer
	log     *slog.Logger
	timeout time.Duration
	maxLine int

	wmu sync.Mutex

	pending *jsonrpc.Pending[message]
	done    chan struct{}
}

var _ companion.Editor = (*Conn)(nil)

// New makes a Conn reading the editor's messages from r and writing
// gemkit's to w. Call Run to start reading.
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
	return &Conn{
		r: r, w: w, log: o.Logger, timeout: o.RequestTimeout, maxLine: o.MaxLine,
		pending: jsonrpc.NewPending[message](ErrClosed),
		done:    make(chan struct{}),
	}
}

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Done is closed when Run has returned: the editor is gone.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Run reads the editor's messages and passes its reports to ev until the
// editor closes its end (then Run returns nil) or ctx ends. A malformed
// line is answered with a JSON-RPC error (or logged, for a notification)
// and reading goes on. Once Run has returned no further report reaches ev,
// except from a line whose handling had already begun.
func (c *Conn) Run(ctx context.Context, ev companion.Events) error {
	defer c.closePending()
	readErr := make(chan error, 1)
	// Lines are handled in the reading goroutine itself, in order: a hop
	// to another goroutine would add a wake-up to every editor event on
	// its way to the CLI. A read cannot be interrupted, so on ctx Run
	// returns without it.
	go func() { readErr <- c.readLines(ev) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-readErr:
		if err == nil || errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("editor protocol: read: %w", err)
	}
}

// readLines handles each non-empty line until the stream ends or Run has
// returned; an over-long line is answered with an error and skipped.
func (c *Conn) readLines(ev companion.Events) error {
	br := bufio.NewReaderSize(c.r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.maxLine {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		select {
		case <-c.done:
			return nil // Run has returned
		default:
		}
		// The end of a line (err nil) or of the stream (err not nil).
		if tooLong {
			c.log.Error("editor protocol: line too long; skipped", "limit", c.maxLine)
			c.reply(nil, nil, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: line longer than " + strconv.Itoa(c.maxLine) + " bytes"})
			tooLong = false
		} else if line := bytes.TrimSpace(buf); len(line) > 0 {
			c.handleLine(line, ev)
		}
		buf = buf[:0]
		if err != nil {
			return err
		}
	}
}

func (c *Conn) handleLine(line []byte, ev companion.Events) {
	if !json.Valid(line) {
		err := json.Unmarshal(line, new(any)) // for the position of the mistake
		c.log.Error("editor protocol: parse error", "err", err)
		c.reply(nil, nil, &Error{Code: CodeParseError, Message: "Parse error: " + jsonProblem(err)})
		return
	}
	if err := ide.CheckJSONText(line); err != nil {
		// encoding/json would turn the bad text into U+FFFD and an
		// accepted diff would reach the CLI changed. Refused whether the
		// line is a request or a notification: silence would lose it.
		var m message
		_ = json.Unmarshal(line, &m)
		method := m.Method
		if method == "" {
			method = "the message"
		}
		msg := fmt.Sprintf("Invalid params for %s: %v", method, err)
		c.log.Error("editor protocol: " + msg)
		c.reply(validID(m.ID), nil, &Error{Code: CodeInvalidParams, Message: msg})
		return
	}
	if line[0] != '{' {
		msg := "Invalid Request: each line must hold one JSON-RPC object"
		if line[0] == '[' {
			msg += "; batches are not supported"
		}
		c.invalid(nil, msg)
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		// Valid JSON with a member of the wrong type; Unmarshal still
		// filled in the rest, the id included when it could.
		c.invalid(validID(m.ID), "Invalid Request: "+jsonProblem(err))
		return
	}
	id := m.ID
	if bytes.Equal(id, []byte("null")) {
		id = nil
	}
	if id != nil && validID(id) == nil {
		c.invalid(nil, "Invalid Request: id must be a string or a number")
		return
	}
	if m.JSONRPC != "2.0" {
		c.invalid(id, "Invalid Request: jsonrpc must be \"2.0\"")
		return
	}
	switch {
	case m.Method != "":
		c.handleCall(id, m.Method, m.Params, ev)
	case id != nil && (m.Result != nil || m.Error != nil):
		c.handleResponse(id, m)
	default:
		c.invalid(id, "Invalid Request: neither a call (method) nor a response (result or error)")
	}
}

func (c *Conn) invalid(id json.RawMessage, msg string) {
	c.log.Error("editor protocol: " + msg)
	c.reply(id, nil, &Error{Code: CodeInvalidRequest, Message: msg})
}

func (c *Conn) handleResponse(id json.RawMessage, m message) {
	if n, ok := c.pending.Deliver(id, m); !ok {
		c.log.Warn("editor protocol: response to no pending request (late, unknown or never used)", "id", n)
	}
}

// handleCall applies an editor notification. The same methods may come as
// requests (with an id); those get {} or an error back.
func (c *Conn) handleCall(id json.RawMessage, method string, params json.RawMessage, ev companion.Events) {
	err := c.apply(method, params, ev)
	if err == nil {
		if id != nil {
			c.reply(id, json.RawMessage(`{}`), nil)
		}
		return
	}
	var rpcErr *Error
	if !errors.As(err, &rpcErr) {
		rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
	}
	c.log.Error("editor protocol: "+method+" failed", "err", rpcErr.Message)
	if id != nil {
		c.reply(id, nil, rpcErr)
	}
}

func invalidParams(method, why string) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params for %s: %s", method, why)}
}

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
		return invalidParams(method, jsonProblem(err))
	}
	return nil
}

// jsonProblem says what is wrong with a JSON text in the protocol's own
// terms, for a plugin author to act on: no Go type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("expected %s, got %s", jsonKind(te.Type), te.Value)
		}
		return fmt.Sprintf("%s must be %s, got %s", te.Field, jsonKind(te.Type), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON form of a Go type.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// validID returns id when it may be echoed in a reply, else nil.
func validID(id json.RawMessage) json.RawMessage { return jsonrpc.ValidID(id) }

func absPath(method, field, p string) error {
	if p == "" {
		return invalidParams(method, field+" is required")
	}
	if !filepath.IsAbs(p) {
		return invalidParams(method, fmt.Sprintf("%s must be an absolute path, not %q", field, p))
	}
	return nil
}

func (c *Conn) apply(method string, raw json.RawMessage, ev companion.Events) error {
	switch method {
	case MethodFocus, MethodSelection:
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
	case MethodClose, MethodDelete:
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
	case MethodRename:
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
	case MethodWorkspaceUpdate:
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
	case MethodDiffAccepted:
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
	case MethodDiffRejected:
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
	case MethodMention:
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
	default:
		return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
	}
	return nil
}

// reply writes a response; id nil is written as null.
func (c *Conn) reply(id json.RawMessage, result json.RawMessage, e *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}{"2.0", id, result, e}
	if err := c.write(out); err != nil {
		c.log.Error("editor protocol: write response", "err", err)
	}
}

// write sends one message as one line.
func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}

// Notify sends a notification to the editor.
func (c *Conn) Notify(method string, params any) error {
	return c.write(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// Call sends a request to the editor and waits for its answer, at most
// the request timeout. result may be nil.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	m, err := c.pending.Call(ctx, c.timeout, method, func(id int64) error {
		return c.write(struct {
			JSONRPC string `json:"jsonrpc"`
			ID      int64  `json:"id"`
			Method  string `json:"method"`
			Params  any    `json:"params"`
		}{"2.0", id, method, params})
	})
	if err != nil {
		return err
	}
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("editor's answer to %s: %w", method, err)
		}
	}
	return nil
}

// closePending fails every request still waiting: the editor is gone.
func (c *Conn) closePending() {
	if c.pending.Close() {
		close(c.done)
	}
}

// OpenDiff implements companion.Editor with a diff/open request.
func (c *Conn) OpenDiff(ctx context.Context, filePath, newContent string) error {
	return c.Call(ctx, MethodDiffOpen, ide.OpenDiffRequest{FilePath: filePath, NewContent: newContent}, nil)
}

// CloseDiff implements companion.Editor with a diff/close request; a null
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
	for _, f := range res.Files {
		for _, d := range f.Diagnostics {
			switch d.Severity {
			case "error", "warning", "info", "hint":
			default:
				return nil, fmt.Errorf("editor's answer to %s: severity must be error, warning, info or hint, not %q", MethodDiagnostics, d.Severity)
			}
		}
	}
	return res.Files, nil
}

// FileWritten implements companion.Editor with a file/written notification.
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
