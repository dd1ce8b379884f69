package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// TestOutcomesOutliveShutdown: the outcomes of diffs answered just before
// the companion stops reach their clients before the streams end, on every
// transport. The terminal front-end rejects what waits on Ctrl-C and stops
// the companion at once (internal/term Serve); an outcome lost there leaves
// the CLI's "Apply this change?" box waiting for an answer that never comes.
func TestOutcomesOutliveShutdown(t *testing.T) {
	const n = 20 // below wsMaxInFlight: Claude Code's calls all wait at once
	paths := func(ws string) []string {
		var ps []string
		for i := range n {
			ps = append(ps, writeFile(t, ws, fmt.Sprintf("f%d.txt", i), "old\n"))
		}
		return ps
	}
	// The Gemini side: each client dials, then 20 diffs are rejected and
	// the companion stops; next reads the client's next notification.
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, srv *Server) (next func(method string) []byte)
	}{
		{"mcp", func(t *testing.T, srv *Server) func(string) []byte {
			c := dial(t, srv)
			return func(method string) []byte { return c.next(method, 10*time.Second) }
		}},
		{"stream", func(t *testing.T, srv *Server) func(string) []byte {
			c := dialWS(t, "ws://127.0.0.1:"+strconv.Itoa(srv.Port())+StreamPath, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
			c.initialize()
			// The initialized notification has been handled once the peer
			// gets the context it is sent first.
			c.next(ide.MethodContextUpdate, 10*time.Second)
			return func(method string) []byte { return c.next(method, 10*time.Second) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, stop := startStoppable(t, Config{Editor: newFakeEditor()})
			next := tc.dial(t, srv)
			ps := paths(srv.workspaceSnapshot()[0])
			for _, p := range ps {
				srv.diffs.add(p, "", nil)
			}
			for _, p := range ps {
				srv.DiffRejected(p)
			}
			stop()
			for _, p := range ps {
				if msg := next(ide.MethodDiffRejected); !strings.Contains(string(msg), strconv.Quote(p)) {
					t.Fatalf("got %s, want the rejection of %s", msg, p)
				}
			}
		})
	}
	t.Run("claude", func(t *testing.T) {
		ed := newFakeEditor()
		srv, stop := startStoppable(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
		c := dialClaude(t, srv)
		ps := paths(srv.workspaceSnapshot()[0])
		for i, p := range ps {
			c.send(map[string]any{"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": map[string]any{
				"name": "openDiff", "arguments": map[string]any{"old_file_path": p, "new_file_path": p, "new_file_contents": "new\n", "tab_name": filepath.Base(p)},
			}})
		}
		for range ps {
			select {
			case <-ed.openCh:
			case <-time.After(30 * time.Second):
				t.Fatal("the editor was not asked to open every diff")
			}
		}
		for _, p := range ps {
			srv.DiffRejected(p)
		}
		stop()
		got := map[string]bool{}
		for range ps {
			select {
			case m := <-c.resps:
				var res wsToolResult
				if err := json.Unmarshal(m["result"], &res); err != nil || len(res.Content) == 0 || res.Content[0].Text != claudeDiffRejected {
					t.Fatalf("answer %v, want %s", m, claudeDiffRejected)
				}
				got[string(m["id"])] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d openDiff calls answered before the companion stopped", len(got), n)
			}
		}
	})
}

// TestCloseDoesNotWaitForPeople: a Claude Code openDiff still waiting on
// the person does not hold a graceful close up; the close waits on
// replies under way only (park). The close is given no deadline, so
// a wait on the person would never end.
func TestCloseDoesNotWaitForPeople(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	c := dialClaude(t, srv)
	p := writeFile(t, srv.workspaceSnapshot()[0], "a.txt", "old\n")
	c.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "openDiff", "arguments": map[string]any{"old_file_path": p, "new_file_path": p, "new_file_contents": "new\n", "tab_name": "a"},
	}})
	select {
	case <-ed.openCh:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor was not asked to open the diff")
	}
	srv.claude.mu.Lock()
	peers := slices.Collect(maps.Keys(srv.claude.peers))
	srv.claude.mu.Unlock()
	closed := make(chan struct{})
	go func() {
		closeAllFlushed(context.Background(), peers)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the close waited for the person's answer")
	}
}
