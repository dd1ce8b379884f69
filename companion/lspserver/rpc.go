package lspserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// JSON-RPC 2.0 and LSP error codes.
const (
	CodeParseError           = jsonrpc.CodeParseError
	CodeInvalidRequest       = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound       = jsonrpc.CodeMethodNotFound
	CodeInvalidParams        = jsonrpc.CodeInvalidParams
	CodeInternalError        = jsonrpc.CodeInternalError
	CodeServerNotInitialized = jsonrpc.CodeServerNotInitialized
)

// Error is a JSON-RPC error, sent or received ("LSP error -32601: …").
type Error = jsonrpc.Error

// ErrClosed is returned by requests to the client once its stream has
// ended.
var ErrClosed = errors.New("language client connection closed")

// errExit ends reading on the exit notification.
var errExit = errors.New("exit")

// lspWording is how the server has always worded its answers to
// malformed messages; the editor protocol words some of them otherwise.
var lspWording = jsonrpc.Wording{
	NotObject: func(bool) string {
		return "Invalid Request: a message must be one JSON-RPC object (batches are not part of LSP)"
	},
	BadText:   func(_ string, err error) string { return "Invalid params: " + err.Error() },
	BadMember: func(err error) string { return "Invalid Request: " + strings.TrimPrefix(err.Error(), "json: ") },
}

// newConn is the connection to the client, or to a follower of the
// group (group.go): LSP's Content-Length framing.
func newConn(r io.Reader, w io.Writer, o Options) *jsonrpc.Conn {
	return jsonrpc.NewConn(r, w, jsonrpc.Options{
		Framer:      jsonrpc.HeaderFramer(),
		MaxMessage:  o.MaxMessage,
		Logger:      o.Logger,
		LogPrefix:   "lsp: ",
		Peer:        "editor",
		ErrorPrefix: "LSP",
		ErrClosed:   ErrClosed,
		Wording:     lspWording,
	})
}

// serve reads the client's messages until it sends exit, closes its
// stream, or ctx ends.
func (s *Server) serve(ctx context.Context, start StartFunc) error {
	err := s.conn.Run(ctx, jsonrpc.HandlerFunc(func(_ context.Context, r jsonrpc.Request) (any, error) {
		// dispatch answers requests itself, some of them later.
		if err := s.dispatch(r.ID, r.Method, r.Params, start); err != nil {
			s.conn.Stop(err)
		}
		return nil, jsonrpc.ErrNoReply
	}))
	s.mu.Lock()
	clean := s.phase == phaseShutdown
	s.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errExit):
		if !clean {
			return ErrNoShutdown
		}
		return nil
	case errors.Is(err, io.EOF):
		if !clean {
			s.log.Warn("lsp: the client closed its stream without shutdown and exit; stopping")
		}
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.log.Warn("lsp: the client's stream ended inside a message; stopping")
		return nil
	default:
		return fmt.Errorf("lsp: %w", err)
	}
}

// reply answers a request; id nil is sent as null.
func (s *Server) reply(id json.RawMessage, result any, e *Error) {
	var err error
	if e != nil {
		err = e
	}
	s.conn.Reply(id, result, err)
}

// notify sends a notification to the client.
func (s *Server) notify(method string, params any) {
	if err := s.conn.Notify(method, params); err != nil {
		s.log.Error("lsp: write notification", "method", method, "err", err)
	}
}

// messageInfo is window/logMessage's MessageType.Info.
const messageInfo = 3

// LogInfo writes text to the client's log with window/logMessage, type
// Info: what the server says for the record, which the client keeps apart
// from the server's stderr (logged as errors by Neovim). The protocol
// allows it before initialize is answered.
func (s *Server) LogInfo(text string) {
	s.notify("window/logMessage", map[string]any{"type": messageInfo, "message": text})
}

// call sends a request to the client and waits for its answer, at most
// timeout (none when 0) or until ctx ends. result may be nil.
func (s *Server) call(ctx context.Context, timeout time.Duration, method string, params, result any) error {
	return s.conn.Call(ctx, timeout, method, params, result)
}

// decode reads params into v; a mistake is an Invalid params error naming
// the method.
func decode(method string, raw json.RawMessage, v any) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.InvalidParams(method, "params are required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return jsonrpc.InvalidParams(method, err.Error())
	}
	return nil
}
