// Package jsonrpc is gemkit's one JSON-RPC 2.0 core: the message, the
// error and its codes, and a Conn that calls, notifies, replies and hands
// the peer's calls to a Handler, over either framing of a byte stream:
// lines (LineFramer: the stdio editor protocol, companion/editorproto) or
// Content-Length headers (HeaderFramer: the Language Server Protocol's base
// protocol, companion/lspserver, and the language servers gemkit starts).
//
// A Conn serving an editor and one talking to a language server differ
// only in their Options:
//
//	conn := jsonrpc.NewConn(stdout, stdin, jsonrpc.Options{
//		Framer:       jsonrpc.HeaderFramer(),
//		Peer:         "gopls",
//		CancelMethod: "$/cancelRequest",
//	})
//	go conn.Run(ctx, handler) // workspace/configuration, publishDiagnostics, …
//	err := conn.Call(ctx, time.Minute, "initialize", params, &result)
//
// It is written here rather than taken from a library because what the
// two front-ends promise their peers is more than any library on the
// module proxy gives (checked at golang.org/x/exp of Oct 2026, which no
// longer holds jsonrpc2; github.com/sourcegraph/jsonrpc2 v0.2.3;
// go.lsp.dev/jsonrpc2 v1.0.1; x/tools' jsonrpc2_v2 and go-sdk's
// connection are internal packages, go-sdk's public jsonrpc has the
// messages only):
//   - A malformed message is answered, with the exact texts the protocols
//     document and their transcripts test (docs/editor-protocol.md,
//     docs/lsp.md), and reading goes on. sourcegraph/jsonrpc2 closes the
//     connection on the first bad body; go.lsp.dev/jsonrpc2 ends it on a
//     bad header and answers a bad body with a generic "JSON-RPC parse
//     error".
//   - Every message is bounded (40 MiB by default) and skipped whole when
//     over: go.lsp.dev/jsonrpc2 grows a line without limit and accepts a
//     1 GiB frame; sourcegraph/jsonrpc2 decodes any Content-Length.
//   - Text that is not valid Unicode is refused before decoding, never
//     passed on with U+FFFD (CheckJSONText).
//   - Batches are refused, as both protocols have none.
//   - Messages are handled in the reading goroutine, in order: a hop to
//     another goroutine would add a wake-up to every editor event on its
//     way to the CLI.
//   - No dependency: go.lsp.dev/jsonrpc2 brings encoding/json/v2 at a
//     pseudo-version.
package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Error codes: JSON-RPC 2.0's, then the Language Server Protocol's (3.17,
// "ErrorCodes" and "LSPErrorCodes").
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeServerNotInitialized = -32002
	CodeRequestFailed        = -32803
	CodeServerCancelled      = -32802
	CodeContentModified      = -32801
	CodeRequestCancelled     = -32800
)

// Error is a JSON-RPC error object: one gemkit answers with, or one the
// peer answered a call with (Conn.Call returns it).
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// from names the peer that answered with it (Options.ErrorPrefix),
	// for Error; empty for gemkit's own.
	from string
}

func (e *Error) Error() string {
	from := e.from
	if from == "" {
		from = "JSON-RPC"
	}
	return fmt.Sprintf("%s error %d: %s", from, e.Code, e.Message)
}

// InvalidParams is the answer to a call of method whose params are
// wrong, saying why.
func InvalidParams(method, why string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params for " + method + ": " + why}
}

// Request is a call of the peer's: a request when it has an ID, a
// notification when not.
type Request struct {
	// ID is the request's id as sent (a JSON string or number); nil for a
	// notification.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// IsNotification reports whether r expects no answer.
func (r Request) IsNotification() bool { return r.ID == nil }

// MarshalJSON writes r as the peer sent it, to pass it on.
func (r Request) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", r.ID, r.Method, r.Params})
}

// message is any JSON-RPC 2.0 message, as read. Its type name appears in
// encoding/json's errors, which the LSP front-end's answers quote
// ("Go struct field message.method"): keep it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// The messages gemkit writes.
type (
	callMessage struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	notificationMessage struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	responseMessage struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}
)

// validID returns id when it may be echoed in a reply (a string or a
// number), else nil, which is sent as null.
func validID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	if id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9') {
		return id
	}
	return nil
}

// Problem says what is wrong with a JSON text in the protocol's own
// terms, for a plugin author to act on: no Go type names.
func Problem(err error) string {
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
