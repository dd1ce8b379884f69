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

// TestStopRejectsWaitingDiffs: a companion that stops (its editor quit
// with :qa!, or was killed) while a Gemini CLI's diff waits rejects that
// diff before its streams end. Gemini CLI 0.61 waits on the IDE's answer
// and, left without one, keeps its "Apply this change?" box on screen
// deaf to its own keys, Esc included (gemini-cli#11239; seen in a tour
// with Neovim 0.10 and Vim). Claude Code keeps its own question
// answerable in its terminal when the editor goes, so its openDiff is
// left unanswered, as before.
func TestStopRejectsWaitingDiffs(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, srv *Server) (open func(path string), next func(method string) []byte)
	}{
		{"mcp", func(t *testing.T, srv *Server) (func(string), func(string) []byte) {
			c := dial(t, srv)
			open := func(p string) { c.callTool("openDiff", map[string]any{"filePath": p, "newContent": "new\n"}) }
			return open, func(method string) []byte { return c.next(method, 10*time.Second) }
		}},
		{"stream", func(t *testing.T, srv *Server) (func(string), func(string) []byte) {
			c := dialWS(t, "ws://127.0.0.1:"+strconv.Itoa(srv.Port())+StreamPath, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
			c.initialize()
			c.next(ide.MethodContextUpdate, 10*time.Second)
			open := func(p string) {
				c.send(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
					"name": "openDiff", "arguments": map[string]any{"filePath": p, "newContent": "new\n"}}})
			}
			return open, func(method string) []byte { return c.next(method, 10*time.Second) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ed := newFakeEditor()
			srv, stop := startStoppable(t, Config{Editor: ed})
			open, next := tc.dial(t, srv)
			p := writeFile(t, srv.workspaceSnapshot()[0], "a.txt", "old\n")
			open(p)
			select {
			case <-ed.openCh:
			case <-time.After(30 * time.Second):
				t.Fatal("the editor was not asked to open the diff")
			}
			stop()
			if msg := next(ide.MethodDiffRejected); !strings.Contains(string(msg), strconv.Quote(p)) {
				t.Fatalf("got %s, want the rejection of %s", msg, p)
			}
		})
	}
	t.Run("claude", func(t *testing.T) {
		ed := newFakeEditor()
		srv, stop := startStoppable(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
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
		stop()
		// The connection ends with the stop; its reader has queued every
		// answer that came before by then.
		timeout := time.After(30 * time.Second)
		for closed := false; !closed; {
			select {
			case _, ok := <-c.notes:
				closed = !ok
			case <-timeout:
				t.Fatal("Claude Code's connection outlived the stop")
			}
		}
		select {
		case m := <-c.resps:
			t.Errorf("Claude Code's openDiff was answered at the stop: %v", m)
		default:
		}
	})
}
