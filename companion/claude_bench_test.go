package companion

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
