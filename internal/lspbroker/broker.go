package lspbroker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/proc"

	"github.com/gemkit/gemkit/internal/buildinfo"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Handler answers one language request, its params as the client sent
// them (langserver.Pool's Handle).
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Broker forwards its clients' language requests to Handler.
type Broker struct {
	// Handler answers the requests: the workspace's Pool.
	Handler Handler
	// Workspace is reported to clients.
	Workspace string
	// FirstClient bounds the wait for the first client (the one that
	// started the broker may have gone); 0 is DefaultFirstClient.
	FirstClient time.Duration
	// Linger keeps the broker this long after its last client went, for
	// a client that comes back at once (0: it ends at once).
	Linger time.Duration
	// Servers, when set, describes the running servers (for `gemkit
	// codeintel status`).
	Servers func() any
	// Logger receives what happens; nil is slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	clients int
	held    map[int]bool  // processes held as clients (helloParams.HoldFor)
	empty   chan struct{} // signalled when clients drops to 0
	ctx     context.Context
}

// holdPoll is how often a held process is looked for.
const holdPoll = 2 * time.Second

// hold counts the process pid as a client until it ends.
func (b *Broker) hold(pid int) {
	b.mu.Lock()
	if b.held[pid] || !alive(pid) {
		b.mu.Unlock()
		return
	}
	if b.held == nil {
		b.held = map[int]bool{}
	}
	b.held[pid] = true
	b.clients++
	b.mu.Unlock()
	go func() {
		t := time.NewTicker(holdPoll)
		defer t.Stop()
		for alive(pid) {
			select {
			case <-b.ctx.Done():
				return
			case <-t.C:
			}
		}
		b.mu.Lock()
		delete(b.held, pid)
		b.clients--
		n := b.clients
		b.mu.Unlock()
		if n == 0 {
			select {
			case b.empty <- struct{}{}:
			default:
			}
		}
	}()
}

// DefaultFirstClient is how long a broker waits for its first client.
const DefaultFirstClient = 30 * time.Second

// Serve accepts clients on ln until its last client has gone (or none
// came within FirstClient), or ctx ends. It closes ln first, so that a
// client coming meanwhile starts a new broker rather than reaching this
// one as it ends.
func (b *Broker) Serve(ctx context.Context, ln net.Listener) error {
	log := b.Logger
	if log == nil {
		log = slog.Default()
	}
	first := b.FirstClient
	if first <= 0 {
		first = DefaultFirstClient
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.ctx = ctx
	b.empty = make(chan struct{}, 1)
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				cancel()
				return
			}
			if err := proc.SameUser(conn); err != nil {
				log.Warn("code intelligence broker: refused a connection", "err", err)
				conn.Close()
				continue
			}
			b.mu.Lock()
			b.clients++
			b.mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
			go b.serveClient(ctx, conn, log)
		}
	}()
	defer ln.Close()
	select {
	case <-accepted:
	case <-time.After(first):
		log.Info("code intelligence broker: no client came; ending")
		return nil
	case <-ctx.Done():
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.empty:
		}
		if b.Linger > 0 {
			select {
			case <-time.After(b.Linger):
			case <-ctx.Done():
				return nil
			}
		}
		b.mu.Lock()
		n := b.clients
		b.mu.Unlock()
		if n == 0 {
			log.Info("code intelligence broker: the last client has gone; ending")
			return nil
		}
	}
}

// serveClient answers one client until it goes. Each request runs in a
// goroutine of its own (a question may wait for a server), cancelled when
// the client goes.
func (b *Broker) serveClient(ctx context.Context, nc net.Conn, log *slog.Logger) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		nc.Close()
		b.mu.Lock()
		b.clients--
		n := b.clients
		b.mu.Unlock()
		if n == 0 {
			select {
			case b.empty <- struct{}{}:
			default:
			}
		}
	}()
	conn := jsonrpc.NewConn(nc, nc, jsonrpc.Options{Framer: jsonrpc.LineFramer(), Logger: log, LogPrefix: "code intelligence broker: ", Peer: "client"})
	go func() {
		<-ctx.Done()
		nc.Close()
	}()
	conn.Run(ctx, jsonrpc.HandlerFunc(func(ctx context.Context, r jsonrpc.Request) (any, error) {
		if r.IsNotification() {
			return nil, nil
		}
		go func() {
			res, err := b.handle(ctx, r.Method, r.Params)
			if m, ok := res.(json.Marshaler); ok && err == nil {
				// lsp/request's answer writes itself, the servers'
				// answers as they came, and the connection writes that
				// as it is: 150 KB of references are not scanned again.
				var raw []byte
				if raw, err = m.MarshalJSON(); err == nil {
					res = json.RawMessage(raw)
				}
			}
			conn.Reply(r.ID, res, err)
		}()
		return nil, jsonrpc.ErrNoReply
	}))
}

// handle answers one request: the broker's own, or the Handler's.
func (b *Broker) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case mHello:
		var p helloParams
		if len(params) > 0 {
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, jsonrpc.InvalidParams(method, jsonrpc.Problem(err))
			}
		}
		if p.HoldFor > 0 {
			b.hold(p.HoldFor)
		}
		return Hello{Workspace: b.Workspace, Pid: os.Getpid(), Version: buildinfo.Version()}, nil
	case mServers:
		if b.Servers != nil {
			return b.Servers(), nil
		}
		return []any{}, nil
	}
	if b.Handler == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s", method)}
	}
	return b.Handler(ctx, method, params)
}
