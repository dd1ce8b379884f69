//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// claudeClient is a Claude Code stand-in connected to a companion's Claude
// Code endpoint, so that "idle RSS after connect" counts both agents: it
// connects as the CLI does (lock file, subprotocol mcp, the token header),
// initializes, and then only drains what it is sent.
type claudeClient struct{ c *websocket.Conn }

// connectClaude finds the lock file in lockDir and connects; it returns
// nil, nil when there is none (the server serves Gemini CLI only).
func connectClaude(ctx context.Context, lockDir string) (*claudeClient, error) {
	// The lock file is written just after the discovery file.
	var entries []os.DirEntry
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		entries, err = os.ReadDir(lockDir)
		if err == nil && len(entries) > 0 {
			break
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
	}
	for _, e := range entries {
		port, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(lockDir, e.Name()))
		if err != nil {
			return nil, err
		}
		var lock struct {
			AuthToken string `json:"authToken"`
		}
		if err := json.Unmarshal(data, &lock); err != nil {
			return nil, fmt.Errorf("lock file %s: %w", e.Name(), err)
		}
		c, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+"/", &websocket.DialOptions{
			Subprotocols: []string{"mcp"},
			HTTPHeader:   http.Header{"X-Claude-Code-Ide-Authorization": {lock.AuthToken}},
		})
		if err != nil {
			return nil, fmt.Errorf("claude code endpoint: %w", err)
		}
		c.SetReadLimit(-1)
		send := func(v string) error { return c.Write(ctx, websocket.MessageText, []byte(v)) }
		if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`); err != nil {
			return nil, err
		}
		if _, _, err := c.Read(ctx); err != nil {
			return nil, fmt.Errorf("claude code initialize: %w", err)
		}
		if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			return nil, err
		}
		if err := send(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":1}}`); err != nil {
			return nil, err
		}
		go func() {
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		return &claudeClient{c: c}, nil
	}
	return nil, nil
}

func (c *claudeClient) close() {
	if c != nil {
		c.c.Close(websocket.StatusNormalClosure, "")
	}
}
