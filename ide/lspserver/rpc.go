package lspserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// JSON-RPC 2.0 and LSP error codes.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternalError        = -32603
	CodeServerNotInitialized = -32002
)

// Error is a JSON-RPC error, sent or received.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("LSP error %d: %s", e.Code, e.Message) }

// ErrClosed is returned by requests to the client once its stream has
// ended.
var ErrClosed = errors.New("language client connection closed")

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// send writes one framed message.
func (s *Server) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.w.Write(frame(b))
	return err
}

// reply answers a request; id nil is sent as null.
func (s *Server) reply(id json.RawMessage, result any, e *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id, Error: e}
	if e == nil {
		if result == nil {
			result = json.RawMessage("null") // a result member is required
		}
		out.Result = result
	}
	if err := s.send(out); err != nil {
		s.log.Error("lsp: write response", "err", err)
	}
}

// notify sends a notification to the client.
func (s *Server) notify(method string, params any) {
	err := s.send(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err != nil {
		s.log.Error("lsp: write notification", "method", method, "err", err)
	}
}

// call sends a request to the client and waits for its answer, at most
// timeout (none when 0) or until ctx ends. result may be nil.
func (s *Server) call(ctx context.Context, timeout time.Duration, method string, params, result any) error {
	m, err := s.pending.Call(ctx, timeout, method, func(id int64) error {
		return s.send(struct {
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

// handleResponse passes a client's response to the request waiting for
// it.
func (s *Server) handleResponse(id json.RawMessage, m message) {
	if n, ok := s.pending.Deliver(id, m); !ok {
		s.log.Warn("lsp: response to no pending request (late, unknown or never used)", "id", n)
	}
}

// validID returns id when it may be echoed in a reply, else nil.
func validID(id json.RawMessage) json.RawMessage { return jsonrpc.ValidID(id) }

// decode reads params into v; a mistake is an Invalid params error naming
// the method.
func decode(method string, raw json.RawMessage, v any) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params for " + method + ": params are required"}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params for " + method + ": " + err.Error()}
	}
	return nil
}
