package lspclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// errClosed is the error of calls once the server's stream has ended.
var errClosed = errors.New("the language server's connection closed")

// conn is the client's JSON-RPC connection to its server: internal/jsonrpc
// with LSP's Content-Length framing and $/cancelRequest for the requests
// given up.
type conn struct {
	c    *jsonrpc.Conn
	w    io.Closer
	stop context.CancelFunc
}

// newConn reads the server's messages from r and writes to w; handle
// takes the server's requests and notifications (it must not block).
func newConn(r io.Reader, w io.WriteCloser, handle func(method string, params json.RawMessage) (any, error), log *slog.Logger) *conn {
	c := jsonrpc.NewConn(r, w, jsonrpc.Options{
		Framer:       jsonrpc.HeaderFramer(),
		Logger:       log,
		LogPrefix:    "lsp client: ",
		Peer:         "language server",
		ErrorPrefix:  "language server",
		ErrClosed:    errClosed,
		CancelMethod: "$/cancelRequest",
	})
	ctx, cancel := context.WithCancel(context.Background())
	go c.Run(ctx, jsonrpc.HandlerFunc(func(_ context.Context, r jsonrpc.Request) (any, error) {
		res, err := handle(r.Method, r.Params)
		if errors.Is(err, errMethodNotFound) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + r.Method}
		}
		return res, err
	}))
	return &conn{c: c, w: w, stop: cancel}
}

// call sends a request and waits for its answer until ctx ends.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, 0, method, params, result)
}

func (c *conn) notify(method string, params any) error { return c.c.Notify(method, params) }

// close ends the connection: the server's stdin is closed, and calls
// waiting fail with errClosed.
func (c *conn) close() {
	c.w.Close()
	c.stop()
}

// errorCode is the JSON-RPC error code of a server's error answer, or 0.
func errorCode(err error) int {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
