package companion

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gemkit/gemkit/ide"
)

// BenchmarkStreamOpenDiffAck is BenchmarkOpenDiffAck over /stream (MCP
// over WebSocket) instead of Streamable HTTP.
func BenchmarkStreamOpenDiffAck(b *testing.B) {
	ws := b.TempDir()
	srv := startServer(b, Config{Editor: ackEditor{}, Workspace: []string{ws}})
	c := dialWS(b, "ws://127.0.0.1:"+strconv.Itoa(srv.Port())+StreamPath, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "mcp")
	c.initialize()
	args := map[string]any{"filePath": filepath.Join(ws, "f.go"), "newContent": "package f\n"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if r := c.tool(ide.ToolOpenDiff, args, 5*time.Second); r.IsError {
			b.Fatalf("openDiff: %v", r.texts())
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkClaudeOpenDiff measures Claude Code's openDiff over its
// WebSocket, from the call to FILE_SAVED, the editor accepting at once:
// Claude's openDiff answers with the outcome, so it compares with
// BenchmarkDiffRoundTrip (ack, then the ide/diffAccepted notification).
func BenchmarkClaudeOpenDiff(b *testing.B) {
	ws := b.TempDir()
	srv := startServer(b, Config{Workspace: []string{ws}, Claude: true, ClaudeLockDir: b.TempDir()})
	srv.editor = acceptEditor{srv}
	c := dialWS(b, "ws://127.0.0.1:"+strconv.Itoa(srv.ClaudePort())+"/", http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}}, "mcp")
	c.initialize()
	path := filepath.Join(ws, "f.go")
	args := map[string]any{"old_file_path": path, "new_file_path": path, "new_file_contents": "package f\n", "tab_name": "f.go"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if r := c.tool("openDiff", args, 5*time.Second); r.IsError || r.Content[0].Text != "FILE_SAVED" {
			b.Fatalf("openDiff: %v", r.texts())
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkClaudeConnect measures what Claude Code waits on of the
// companion when it connects: the WebSocket upgrade and initialize's
// answer, from the dial to the answer read (bench/editors' "dial →
// initialize answered", without an editor).
func BenchmarkClaudeConnect(b *testing.B) {
	srv := startServer(b, Config{Workspace: []string{b.TempDir()}, Claude: true, ClaudeLockDir: b.TempDir()})
	url := "ws://127.0.0.1:" + strconv.Itoa(srv.ClaudePort()) + "/"
	opts := &websocket.DialOptions{HTTPHeader: http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}}, Subprotocols: []string{"mcp"}}
	initialize := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		c, _, err := websocket.Dial(ctx, url, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, initialize); err != nil {
			b.Fatal(err)
		}
		if _, msg, err := c.Read(ctx); err != nil || !bytes.Contains(msg, []byte(`"result"`)) {
			b.Fatalf("initialize: %s, %v", msg, err)
		}
		lat = append(lat, time.Since(start))
		c.Close(websocket.StatusNormalClosure, "")
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}
