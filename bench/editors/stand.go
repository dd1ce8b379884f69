//go:build linux

package main

// The Claude Code stand-in's WebSocket client.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// stand is the Claude Code stand-in: what the CLI sends to connect (its
// ws-ide transport: a WebSocket with subprotocol mcp and the lock file's
// token in X-Claude-Code-Ide-Authorization; initialize, then
// notifications/initialized and ide_connected), then requests and the
// selection_changed notifications read off the socket.
type stand struct {
	c       *websocket.Conn
	mu      sync.Mutex
	next    int
	pending map[int]chan json.RawMessage
	sel     chan string
}

func dial(ctx context.Context, lockPath string) (*stand, error) {
	data, err := os.ReadFile(lockPath)
	if err != nil {
		return nil, err
	}
	var lock struct {
		AuthToken string `json:"authToken"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", lockPath, err)
	}
	port := strings.TrimSuffix(filepath.Base(lockPath), ".lock")
	c, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port, &websocket.DialOptions{
		Subprotocols: []string{"mcp"},
		HTTPHeader:   http.Header{"X-Claude-Code-Ide-Authorization": {lock.AuthToken}},
	})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	s := &stand{c: c, pending: map[int]chan json.RawMessage{}, sel: make(chan string, 256)}
	init, err := s.call(ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "2.1.330"}})
	if err != nil {
		return nil, err
	}
	select {
	case <-init:
	case <-time.After(10 * time.Second):
		return nil, errors.New("initialize not answered")
	}
	if err := s.send(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	if err := s.send(ctx, map[string]any{"jsonrpc": "2.0", "method": "ide_connected", "params": map[string]any{"pid": os.Getpid()}}); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stand) send(ctx context.Context, v any) error {
	b, _ := json.Marshal(v)
	return s.c.Write(ctx, websocket.MessageText, b)
}

// call sends a request; the channel gets its answer. The first call
// starts the reader.
func (s *stand) call(ctx context.Context, method string, params any) (<-chan json.RawMessage, error) {
	s.mu.Lock()
	s.next++
	id := s.next
	ch := make(chan json.RawMessage, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	if id == 1 {
		go s.read()
	}
	return ch, s.send(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

func (s *stand) read() {
	for {
		_, b, err := s.c.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch {
		case m.ID != nil && m.Method == "":
			s.mu.Lock()
			ch := s.pending[*m.ID]
			delete(s.pending, *m.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- m.Result
			}
		case m.Method == "selection_changed":
			var p struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Params, &p)
			select {
			case s.sel <- p.Text:
			default:
			}
		}
	}
}

// drain forgets the selections read so far.
func (s *stand) drain() {
	for {
		select {
		case <-s.sel:
		default:
			return
		}
	}
}

func (s *stand) waitSelection(ctx context.Context, ok func(string) bool, d time.Duration) error {
	timeout := time.After(d)
	for {
		select {
		case text := <-s.sel:
			if ok(text) {
				return nil
			}
		case <-timeout:
			return errors.New("timed out")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *stand) close() { s.c.Close(websocket.StatusNormalClosure, "") }
