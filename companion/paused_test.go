package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
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
	// The session is dropped inside the server, which tells no one.
	if !gemkittest.Poll(30*time.Second, 10*time.Millisecond, func() bool { return srv.sess.get(paused.sid) == nil }) {
		t.Fatalf("the paused session is still open after %d outcomes of %d bytes", diffs, diffSize)
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

// TestClientDiesWhileDiffOpens: when the client that asked for a diff goes
// away while the editor is still showing it, the editor is told to close
// it (diff/close), so no diff stays open with nobody to take its outcome.
func TestClientDiesWhileDiffOpens(t *testing.T) {
	ed := newFakeEditor()
	ed.hang = true
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: ed})
	c := dial(t, srv)
	path := filepath.Join(ws, "a.txt")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call",
		"params": map[string]any{"name": "openDiff", "arguments": map[string]any{"filePath": path, "newContent": "x"}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := c.hc.Do(c.request(http.MethodPost, body).WithContext(ctx)); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, func() bool {
		ed.mu.Lock()
		defer ed.mu.Unlock()
		return len(ed.opened) == 1
	})
	cancel() // the client dies
	<-done
	waitFor(t, func() bool {
		ed.mu.Lock()
		defer ed.mu.Unlock()
		return len(ed.closed) == 1 && ed.closed[0] == path
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	// cond reads the server's inner state, which has no event to wait on.
	if !gemkittest.Poll(20*time.Second, 5*time.Millisecond, cond) {
		t.Fatal("condition not met within 20 s")
	}
}

// TestUnwritableDiscoveryFolderSaysOneThing: when the discovery folder
// cannot be written, Serve fails with that error and logs no warnings
// about cleaning or removing files before it.
func TestUnwritableDiscoveryFolderSaysOneThing(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	srv, err := New(Config{
		Workspace:    []string{t.TempDir()},
		DiscoveryDir: filepath.Join(notDir, "gemini", "ide"),
		PID:          os.Getpid(),
		Logger:       slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Serve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "discovery") {
		t.Fatalf("Serve = %v, want the discovery folder's error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "WARN") {
		t.Fatalf("warnings before the error:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
