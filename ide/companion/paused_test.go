package companion

import (
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// TestPausedClientIsClosed: a client whose event stream is open but that
// reads nothing (as one stopped with SIGSTOP) while another accepts large
// diffs does not make the server's memory grow: once its outbox passes
// its bound in bytes the session is closed, and the live client still
// gets every outcome.
func TestPausedClientIsClosed(t *testing.T) {
	const (
		outboxBytes = 8 << 20
		diffs       = 40
		diffSize    = 1 << 20
	)
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: ed, MaxOutboxBytes: outboxBytes})

	paused := dial(t, srv)
	paused.closeGET()
	conn, err := net.Dial("tcp", srv.hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A real reader that stops: it opens its stream and never reads.
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n%s: %s\r\n%s: %s\r\n\r\n",
		ide.MCPPath, srv.hosts[0], srv.Token(), ide.HeaderSessionID, paused.sid, ide.HeaderProtocolVersion, ide.ProtocolVersion)

	live := dial(t, srv)
	live.next(ide.MethodContextUpdate, 10*time.Second)
	heapBefore := heapInUse()
	content := strings.Repeat("x", diffSize)
	for i := range diffs {
		path := filepath.Join(ws, fmt.Sprintf("f%d.txt", i))
		if res, raw := live.callTool("openDiff", map[string]any{"filePath": path, "newContent": "proposed"}); res.IsError {
			t.Fatalf("openDiff: %s", raw)
		}
		<-ed.openCh
		srv.DiffAccepted(path, content)
		if got := live.next(ide.MethodDiffAccepted, 30*time.Second); !strings.Contains(string(got), path) {
			t.Fatalf("diff %d: the live client got %.100s", i, got)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for srv.sess.get(paused.sid) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the paused session is still open after %d outcomes of %d bytes", diffs, diffSize)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if srv.sess.get(live.sid) == nil {
		t.Fatal("the live session was closed")
	}
	if grown := heapInUse() - heapBefore; grown > 3*outboxBytes {
		t.Errorf("heap grew by %d MiB while %d MiB of outcomes went out", grown>>20, diffs*diffSize>>20)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
