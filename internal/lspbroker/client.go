package lspbroker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/proc"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Client carries the language requests of internal/lspsource's Source to
// the workspace's broker, starting it when none runs. It connects at its
// first request, and once more when the broker went meanwhile.
type Client struct {
	// Socket is the broker's socket (SocketPath).
	Socket string
	// Start starts a broker listening on Socket and returns once it
	// listens (Command.Start, or a test's own).
	Start func(ctx context.Context) error
	// HoldFor, when not 0, is the process this client works for (see
	// helloParams.HoldFor): the broker lives on while it does.
	HoldFor int
	// Logger receives what happens; nil is slog.Default().
	Logger *slog.Logger

	mu     sync.Mutex
	conn   *jsonrpc.Conn
	nc     net.Conn
	hello  Hello
	closed bool
}

var errClosedClient = errors.New("the code intelligence client is closed")

// errBrokerGone is a call's error when the broker went before answering.
var errBrokerGone = errors.New("the code intelligence broker went away")

// connect returns the connection to the broker, dialling it (and, with
// spawn, starting it when none listens) when there is none.
func (c *Client) connect(ctx context.Context, spawn bool) (*jsonrpc.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosedClient
	}
	if c.conn != nil {
		select {
		case <-c.conn.Done():
			c.nc.Close()
			c.conn, c.nc = nil, nil
		default:
			return c.conn, nil
		}
	}
	nc, err := dial(c.Socket)
	if err != nil && spawn && absent(err) {
		nc, err = c.spawn(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := proc.SameUser(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("the code intelligence broker at %s: %w", c.Socket, err)
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	conn := jsonrpc.NewConn(nc, nc, jsonrpc.Options{Framer: jsonrpc.LineFramer(), Logger: log, LogPrefix: "code intelligence: ",
		Peer: "code intelligence broker", ErrClosed: errBrokerGone})
	go conn.Run(context.Background(), jsonrpc.HandlerFunc(func(context.Context, jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "a client answers nothing"}
	}))
	var h Hello
	if err := conn.Call(ctx, 30*time.Second, mHello, helloParams{HoldFor: c.HoldFor}, &h); err != nil {
		nc.Close()
		return nil, fmt.Errorf("the code intelligence broker at %s: %w", c.Socket, err)
	}
	c.conn, c.nc, c.hello = conn, nc, h
	return conn, nil
}

// spawn starts the broker, under a lock so that two clients starting at
// once start one broker, and dials it.
func (c *Client) spawn(ctx context.Context) (net.Conn, error) {
	unlock, err := lockFile(c.Socket + ".lock")
	if err != nil {
		return nil, fmt.Errorf("start the code intelligence broker: %w", err)
	}
	defer unlock()
	// Another client may have started it while this one waited.
	if nc, err := dial(c.Socket); err == nil || !absent(err) {
		return nc, err
	}
	if c.Start == nil {
		return nil, errors.New("no code intelligence broker runs for this workspace")
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the code intelligence broker: %w", err)
	}
	return dial(c.Socket)
}

func dial(path string) (net.Conn, error) {
	// Connecting follows a link at the name: a name that is not a socket
	// (a link to another program's) is not gemkit's broker.
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return nil, &os.PathError{Op: "dial", Path: path, Err: errNotSocket}
	}
	return net.DialTimeout("unix", path, 10*time.Second)
}

// errNotSocket is dial's error for a name that is not a socket: no
// broker of gemkit's listens there, and the next one replaces it.
var errNotSocket = errors.New("not a socket (a link or a file), so not a broker of gemkit's")

// absent reports whether a dial failed because no broker listens.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, errNotSocket)
}

// Broker is what the broker said of itself, once connected.
func (c *Client) Broker() Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// Close ends the connection: a broker whose last client this was ends,
// and its servers with it.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		c.nc.Close()
		c.conn, c.nc = nil, nil
	}
	return nil
}

// Call sends one language request to the broker, starting it when none
// runs (internal/lspsource's Conn); a broker that went meanwhile is
// replaced once. lsp/changed starts no broker: with none running, no
// server has the files open.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if method == ide.MethodLSPChanged {
		conn, err := c.connect(ctx, false)
		if err != nil {
			if absent(err) {
				return nil
			}
			return err
		}
		return conn.Call(ctx, 0, method, params, result)
	}
	for attempt := 0; ; attempt++ {
		conn, err := c.connect(ctx, true)
		if err != nil {
			return err
		}
		err = conn.Call(ctx, 0, method, params, result)
		if errors.Is(err, errBrokerGone) && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// Servers describes the broker's running servers into v (a slice of
// langserver.ServerInfo); it does not start a broker.
func (c *Client) Servers(ctx context.Context, v any) error {
	conn, err := c.connect(ctx, false)
	if err != nil {
		return err
	}
	return conn.Call(ctx, 0, mServers, struct{}{}, v)
}
