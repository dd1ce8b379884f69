package companion

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestClaudeUpgradeHeaders: the 101 that answers Claude Code's upgrade
// carries the headers claudecode.nvim's does and no Date, which net/http
// would add and the client has no use for (git show f68add0:bench/README.md, "Issue 47's
// connect: what gemkit controls, byte by byte"). The request is RFC 6455's
// handshake with what Claude Code adds to it (claude.go: the "mcp"
// subprotocol and the lock file's token in ClaudeAuthHeader); the real
// Claude Code connects in editors' TestNeovimClaudeCode.
func TestClaudeUpgradeHeaders(t *testing.T) {
	srv := startServer(t, Config{Workspace: []string{t.TempDir()}, Claude: true, ClaudeLockDir: t.TempDir()})
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(srv.ClaudePort()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: mcp\r\n%s: %s\r\n\r\n",
		srv.ClaudePort(), ClaudeAuthHeader, srv.ClaudeToken())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	if _, ok := resp.Header["Date"]; ok {
		t.Errorf("the 101 carries a Date: %v", resp.Header)
	}
	for _, h := range []string{"Upgrade", "Connection", "Sec-Websocket-Accept", "Sec-Websocket-Protocol"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("the 101 lacks %s: %v", h, resp.Header)
		}
	}
}
