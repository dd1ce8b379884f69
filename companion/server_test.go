package companion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

func TestGuard(t *testing.T) {
	srv := startServer(t, Config{})
	good := "Bearer " + srv.Token()
	host := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	big := strings.Repeat("x", ide.MaxRequestBody+1)
	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		body   string
		want   int
	}{
		{"no token", "POST", "/mcp", map[string]string{"Content-Type": "application/json"}, init, 401},
		{"wrong token", "POST", "/mcp", map[string]string{"Authorization": "Bearer nope"}, init, 401},
		{"token without Bearer", "POST", "/mcp", map[string]string{"Authorization": srv.Token()}, init, 401},
		{"lower-case bearer", "POST", "/mcp", map[string]string{"Authorization": "bearer " + srv.Token()}, init, 401},
		{"token with a suffix", "POST", "/mcp", map[string]string{"Authorization": good + "x"}, init, 401},
		{"no token on keep-alive", "GET", "/keep-alive", nil, "", 401},
		{"no token on write-file", "POST", "/write-file", nil, `{}`, 401},
		{"no token on an unknown path", "GET", "/nope", nil, "", 401},
		{"foreign Host", "POST", "/mcp", map[string]string{"Authorization": good, "Host": fmt.Sprintf("evil.example:%d", srv.Port())}, init, 403},
		{"Host without port", "GET", "/keep-alive", map[string]string{"Authorization": good, "Host": "127.0.0.1"}, "", 403},
		{"Host with another port", "GET", "/keep-alive", map[string]string{"Authorization": good, "Host": fmt.Sprintf("localhost:%d", srv.Port()+1)}, "", 403},
		{"Origin header", "POST", "/mcp", map[string]string{"Authorization": good, "Origin": "http://evil.example"}, init, 403},
		{"Origin even from localhost", "GET", "/keep-alive", map[string]string{"Authorization": good, "Origin": "http://" + host}, "", 403},
		{"Origin without token", "GET", "/keep-alive", map[string]string{"Origin": "null"}, "", 403},
		{"body too large", "POST", "/write-file", map[string]string{"Authorization": good}, big, 413},
		{"keep-alive", "GET", "/keep-alive", map[string]string{"Authorization": good}, "", 200},
		{"keep-alive via localhost", "GET", "/keep-alive", map[string]string{"Authorization": good, "Host": fmt.Sprintf("localhost:%d", srv.Port())}, "", 200},
		{"keep-alive wrong method", "POST", "/keep-alive", map[string]string{"Authorization": good}, "", 405},
		{"unknown path", "GET", "/nope", map[string]string{"Authorization": good}, "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := httpDo(t, srv, tt.method, tt.path, tt.hdr, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if !json.Valid(body) {
				t.Fatalf("body is not JSON: %s", body)
			}
			if bytes.Contains(body, []byte(srv.Token())) {
				t.Fatal("the token leaked into a response")
			}
		})
	}
}

func TestKeepAliveVersion(t *testing.T) {
	srv := startServer(t, Config{Version: "1.2.3"})
	_, body := httpDo(t, srv, "GET", "/keep-alive", map[string]string{"Authorization": "Bearer " + srv.Token()}, "")
	if string(bytes.TrimSpace(body)) != `{"version":"1.2.3"}` {
		t.Fatalf("keep-alive: %s", body)
	}
}

func TestSessionChecks(t *testing.T) {
	srv := startServer(t, Config{})
	c := dial(t, srv)
	auth := "Bearer " + srv.Token()
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	tests := []struct {
		name   string
		method string
		sid    string
		body   string
		want   int
	}{
		{"POST without session", "POST", "", list, 400},
		{"POST with unknown session", "POST", "4a1b2c3d-0000-4000-8000-000000000000", list, 400},
		{"POST with garbage session", "POST", "x", list, 400},
		{"GET without session", "GET", "", "", 400},
		{"GET with unknown session", "GET", "nope", "", 400},
		{"DELETE with unknown session", "DELETE", "nope", "", 400},
		{"POST with the session", "POST", c.sid, list, 200},
		{"PUT", "PUT", c.sid, "", 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{"Authorization": auth, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
			if tt.sid != "" {
				hdr[ide.HeaderSessionID] = tt.sid
			}
			resp, body := httpDo(t, srv, tt.method, "/mcp", hdr, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want == 400 {
				var m struct {
					JSONRPC string `json:"jsonrpc"`
					Error   struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Error.Code != -32000 {
					t.Fatalf("want a JSON-RPC -32000 error, got %s", body)
				}
			}
		})
	}
	// DELETE ends the session and its stream.
	resp, body := httpDo(t, srv, "DELETE", "/mcp", map[string]string{"Authorization": auth, ide.HeaderSessionID: c.sid, ide.HeaderProtocolVersion: ide.ProtocolVersion}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	select {
	case <-c.getDone:
	case <-time.After(30 * time.Second):
		t.Fatal("DELETE did not end the event stream")
	}
	resp, _ = httpDo(t, srv, "POST", "/mcp", map[string]string{"Authorization": auth, "Content-Type": "application/json", ide.HeaderSessionID: c.sid}, list)
	if resp.StatusCode != 400 {
		t.Fatalf("deleted session still accepted: %d", resp.StatusCode)
	}
}

func TestToolsList(t *testing.T) {
	srv := startServer(t, Config{})
	c := dial(t, srv)
	raw, _ := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": "tools/list"})
	if bytes.Contains(raw, []byte("null")) {
		t.Fatalf("tools/list carries a null: %s", raw)
	}
	var m struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Type       string                     `json:"type"`
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ide.ToolOpenDiff: {"filePath", "newContent"}, ide.ToolCloseDiff: {"filePath"}}
	if len(m.Result.Tools) != 2 {
		t.Fatalf("tools: %s", raw)
	}
	for _, tool := range m.Result.Tools {
		req, ok := want[tool.Name]
		if !ok {
			t.Fatalf("unexpected tool %s", tool.Name)
		}
		if tool.InputSchema.Type != "object" || fmt.Sprint(tool.InputSchema.Required) != fmt.Sprint(req) {
			t.Fatalf("schema of %s: %+v", tool.Name, tool.InputSchema)
		}
		for _, r := range req {
			if _, ok := tool.InputSchema.Properties[r]; !ok {
				t.Fatalf("%s lacks property %s", tool.Name, r)
			}
		}
	}
}

func TestOpenDiffOutcomes(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	a, b := dial(t, srv), dial(t, srv)
	existing := writeFile(t, ws, "a.go", "old\n")
	newFile := filepath.Join(ws, "new", "file.go")

	tests := []struct {
		name    string
		path    string
		resolve func(path string)
		method  string
		want    string
	}{
		{"accepted with edits", existing, func(p string) { srv.DiffAccepted(p, "new\n// mine\n") }, ide.MethodDiffAccepted,
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide/diffAccepted","params":{"filePath":%q,"content":"new\n// mine\n"}}`, existing)},
		{"rejected", existing, func(p string) { srv.DiffRejected(p) }, ide.MethodDiffRejected,
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide/diffRejected","params":{"filePath":%q}}`, existing)},
		{"new file accepted", newFile, func(p string) { srv.DiffAccepted(p, "") }, ide.MethodDiffAccepted,
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide/diffAccepted","params":{"filePath":%q,"content":""}}`, newFile)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, raw := a.callTool(ide.ToolOpenDiff, map[string]any{"filePath": tt.path, "newContent": "new\n"})
			if res.IsError || string(raw) != `{"content":[]}` {
				t.Fatalf("openDiff result: %s", raw)
			}
			got := <-ed.openCh
			if got.FilePath != tt.path || got.NewContent != "new\n" {
				t.Fatalf("editor got %+v", got)
			}
			if tt.path == newFile {
				if _, err := os.Stat(newFile); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a new file must not exist when its diff opens: %v", err)
				}
			}
			tt.resolve(tt.path)
			for _, c := range []*rawClient{a, b} {
				if msg := c.next(tt.method, 2*time.Second); string(msg) != tt.want {
					t.Fatalf("notification:\n got %s\nwant %s", msg, tt.want)
				}
			}
			// A second outcome for the same diff is not forwarded.
			tt.resolve(tt.path)
			a.none(tt.method, 100*time.Millisecond)
		})
	}
}

func TestOpenDiffFailures(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		name   string
		editor Editor
		args   map[string]any
		want   string
	}{
		{"editor error", &fakeEditor{openErr: errors.New("view refused"), openCh: make(chan ide.OpenDiffRequest, 1)},
			map[string]any{"filePath": filepath.Join(ws, "a"), "newContent": "x"}, "view refused"},
		{"editor does not answer in time", &fakeEditor{hang: true, openCh: make(chan ide.OpenDiffRequest, 1)},
			map[string]any{"filePath": filepath.Join(ws, "a"), "newContent": "x"}, "did not show the diff within"},
		{"no editor", nil, map[string]any{"filePath": filepath.Join(ws, "a"), "newContent": "x"}, "no editor is attached"},
		{"relative path", newFakeEditor(), map[string]any{"filePath": "a.go", "newContent": "x"}, "absolute"},
		{"missing newContent", newFakeEditor(), map[string]any{"filePath": filepath.Join(ws, "a")}, "newContent"},
		{"missing filePath", newFakeEditor(), map[string]any{"newContent": "x"}, "filePath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, Config{Editor: tt.editor, Workspace: []string{ws}, EditorTimeout: 150 * time.Millisecond})
			c := dial(t, srv)
			res, raw := c.callTool(ide.ToolOpenDiff, tt.args)
			if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || !strings.Contains(res.Content[0].Text, tt.want) {
				t.Fatalf("want isError with %q, got %s", tt.want, raw)
			}
			// The failed diff is forgotten: a late outcome is not forwarded.
			srv.DiffAccepted(filepath.Join(ws, "a"), "late")
			c.none(ide.MethodDiffAccepted, 100*time.Millisecond)
		})
	}
}

func TestCloseDiff(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	c := dial(t, srv)
	p := filepath.Join(ws, "f.txt")
	// A plugin that reports the closing tab as a rejection: the companion
	// must not forward it, the CLI resolves the diff itself.
	ed.onClose = func(path string) { srv.DiffRejected(path) }
	ed.closeContent[p] = "right side\n"

	if res, raw := c.callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "proposal\n"}); res.IsError {
		t.Fatalf("openDiff: %s", raw)
	}
	res, raw := c.callTool(ide.ToolCloseDiff, map[string]any{"filePath": p, "suppressNotification": true})
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != `{"content":"right side\n"}` {
		t.Fatalf("closeDiff: %s", raw)
	}
	c.none(ide.MethodDiffRejected, 150*time.Millisecond)
	// The diff is gone: a late accept is not forwarded either.
	srv.DiffAccepted(p, "late")
	c.none(ide.MethodDiffAccepted, 100*time.Millisecond)

	res, raw = c.callTool(ide.ToolCloseDiff, map[string]any{"filePath": filepath.Join(ws, "none.txt")})
	if res.IsError || res.Content[0].Text != `{}` {
		t.Fatalf("closeDiff of no diff: %s", raw)
	}
	// An emptied right side is content, not "no diff".
	empty := filepath.Join(ws, "emptied.txt")
	ed.closeContent[empty] = ""
	c.callTool(ide.ToolOpenDiff, map[string]any{"filePath": empty, "newContent": "x"})
	if res, raw := c.callTool(ide.ToolCloseDiff, map[string]any{"filePath": empty}); res.IsError || res.Content[0].Text != `{"content":""}` {
		t.Fatalf("closeDiff of an emptied diff: %s", raw)
	}
	res, raw = c.callTool(ide.ToolCloseDiff, map[string]any{})
	if !res.IsError {
		t.Fatalf("closeDiff without filePath: %s", raw)
	}
}

// TestTwoClients runs two clients at once: each gets the responses to its
// own calls, and both get every broadcast.
func TestTwoClients(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	clients := []*rawClient{dial(t, srv), dial(t, srv)}
	for i := range clients {
		ed.closeContent[filepath.Join(ws, fmt.Sprintf("c%d.txt", i))] = fmt.Sprintf("content of client %d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				res, raw := c.callTool(ide.ToolCloseDiff, map[string]any{"filePath": filepath.Join(ws, fmt.Sprintf("c%d.txt", i))})
				if want := fmt.Sprintf(`{"content":"content of client %d"}`, i); res.IsError || res.Content[0].Text != want {
					errs <- fmt.Errorf("client %d got %s", i, raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	p := filepath.Join(ws, "shared.txt")
	clients[0].callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "x"})
	srv.DiffAccepted(p, "x")
	for _, c := range clients {
		c.next(ide.MethodDiffAccepted, 2*time.Second)
	}
}

// TestTwoAgentsOneFile: two agents propose a change to the same file, one
// after the other (Gemini CLI and Qwen Code at one companion). The second
// proposal replaces the first in the editor, so the first agent alone is
// told its proposal was rejected, before the person's answer to the
// second reaches both (the first no longer waits on the path: the real
// client drops its waiter when the rejection comes, and ignores an
// outcome nobody waits for).
func TestTwoAgentsOneFile(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	first, second := dial(t, srv), dial(t, srv)
	p := filepath.Join(ws, "shared.txt")
	first.callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "first\n"})
	<-ed.openCh
	second.callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "second\n"})
	<-ed.openCh
	want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide/diffRejected","params":{"filePath":%q}}`, p)
	if got := first.next(ide.MethodDiffRejected, 2*time.Second); string(got) != want {
		t.Fatalf("the replaced agent got %s, want %s", got, want)
	}
	srv.DiffAccepted(p, "second, edited\n")
	if got := second.next(ide.MethodDiffAccepted, 2*time.Second); !bytes.Contains(got, []byte("second, edited")) {
		t.Fatalf("the second agent got %s", got)
	}
	second.none(ide.MethodDiffRejected, 100*time.Millisecond)
}

// TestClientVanishesMidDiff: the client that opened a diff disappears; the
// outcome still reaches the other client (which may be the same CLI,
// reconnected with a new session), and the gone session expires.
func TestClientVanishesMidDiff(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}, SessionIdleTTL: 200 * time.Millisecond})
	gone, stays := dial(t, srv), dial(t, srv)
	p := filepath.Join(ws, "f.txt")
	gone.callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "x"})
	gone.close()
	srv.DiffAccepted(p, "x")
	stays.next(ide.MethodDiffAccepted, 2*time.Second)

	// The session expires inside the server, which tells no one.
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { return srv.sess.get(gone.sid) == nil }) {
		t.Fatal("the vanished client's session never expired")
	}
	if srv.sess.get(stays.sid) == nil {
		t.Fatal("a session with an open event stream expired")
	}
	resp, body := httpDo(t, srv, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + srv.Token(), "Content-Type": "application/json", ide.HeaderSessionID: gone.sid}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != 400 {
		t.Fatalf("expired session: %d %s", resp.StatusCode, body)
	}
	// The live client still works.
	if res, raw := stays.callTool(ide.ToolCloseDiff, map[string]any{"filePath": p}); res.IsError {
		t.Fatalf("closeDiff after expiry: %s", raw)
	}
}

// TestQueuedOutcomesSurviveReconnect: outcomes sent while a client's event
// stream is down are delivered, in order, when it comes back.
func TestQueuedOutcomesSurviveReconnect(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	c := dial(t, srv)
	c.closeGET()
	for i := range 3 {
		p := filepath.Join(ws, fmt.Sprintf("f%d", i))
		c.callTool(ide.ToolOpenDiff, map[string]any{"filePath": p, "newContent": "x"})
		srv.DiffRejected(p)
	}
	c.openGET()
	for i := range 3 {
		msg := c.next(ide.MethodDiffRejected, 2*time.Second)
		if !bytes.Contains(msg, []byte(fmt.Sprintf(`f%d"`, i))) {
			t.Fatalf("outcome %d: %s", i, msg)
		}
	}
}

// TestManyOutcomesNoneDropped: far more outcomes than mcp-go's 100-slot
// queue, back to back; every one arrives.
func TestManyOutcomesNoneDropped(t *testing.T) {
	ed := newFakeEditor()
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}})
	c := dial(t, srv)
	const n = 1000
	for i := range n {
		srv.diffs.add(filepath.Join(ws, fmt.Sprint(i)), "", nil)
	}
	for i := range n {
		srv.DiffAccepted(filepath.Join(ws, fmt.Sprint(i)), "x")
	}
	for i := range n {
		msg := c.next(ide.MethodDiffAccepted, 5*time.Second)
		if !bytes.Contains(msg, []byte(fmt.Sprintf(`/%d"`, i))) {
			t.Fatalf("outcome %d out of order: %s", i, msg)
		}
	}
}

func TestPing(t *testing.T) {
	srv := startServer(t, Config{PingInterval: 30 * time.Millisecond})
	c := dial(t, srv)
	msg := c.next("ping", 2*time.Second)
	if string(msg) != `{"jsonrpc":"2.0","method":"ping"}` {
		t.Fatalf("ping: %s", msg)
	}
}

// TestChunkedBodyBounded: a body without a Content-Length is cut at the
// limit too.
func TestChunkedBodyBounded(t *testing.T) {
	srv := startServer(t, Config{})
	for _, path := range []string{"/mcp", "/write-file"} {
		body := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`),
			strings.NewReader(strings.Repeat("x", ide.MaxRequestBody)), strings.NewReader(`"}}`))
		req, _ := http.NewRequest("POST", srv.URL()[:strings.LastIndex(srv.URL(), "/")]+path, body)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: status %d, want 413", path, resp.StatusCode)
		}
	}
}

// TestExpiredSessionsLeaveNothing: clients that vanish without a DELETE
// (as the real one does) leave no session and no goroutine behind once
// their sessions expire.
func TestExpiredSessionsLeaveNothing(t *testing.T) {
	// Long enough that a session does not expire between its client's
	// initialize and the requests that follow on a loaded machine (with
	// 50 ms it did, under -race, some runs in three).
	srv := startServer(t, Config{SessionIdleTTL: 500 * time.Millisecond})
	// cond reads the server's inner state, which has no event to wait on.
	settle := func(cond func() bool) bool { return gemkittest.Poll(30*time.Second, 10*time.Millisecond, cond) }
	vanish := func(n int) {
		for range n {
			c := dial(t, srv)
			c.next(ide.MethodContextUpdate, 2*time.Second)
			c.close()
		}
		if !settle(func() bool { return len(srv.sess.all()) == 0 }) {
			t.Fatalf("%d sessions left after expiry", len(srv.sess.all()))
		}
	}
	// One round first, so that everything the server keeps for good (its
	// sweeper among them) runs before the count.
	vanish(1)
	base := runtime.NumGoroutine()
	vanish(20)
	if !settle(func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before the clients came:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}
}

// noDiffEditor is an editor that cannot show diffs (an LSP client without
// workspace/applyEdit) until shows is set.
type noDiffEditor struct {
	*fakeEditor
	shows atomic.Bool
}

func (e *noDiffEditor) ShowsDiffs() bool { return e.shows.Load() }

// TestToolsListWithoutDiffs: while the editor cannot show diffs, tools/list
// names neither openDiff nor closeDiff (Gemini CLI then takes diffing as
// off, asks in its terminal and writes the file itself) and a call to
// either is refused; once it can, both are back.
func TestToolsListWithoutDiffs(t *testing.T) {
	ed := &noDiffEditor{fakeEditor: newFakeEditor()}
	srv := startServer(t, Config{Editor: ed})
	c := dial(t, srv)
	names := func() []string {
		raw, _ := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": "tools/list"})
		var m struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		var out []string
		for _, tl := range m.Result.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("tools/list for an editor that cannot show diffs: %v", got)
	}
	raw, _ := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": "tools/call",
		"params": map[string]any{"name": ide.ToolOpenDiff, "arguments": map[string]any{"filePath": "/tmp/x", "newContent": "y"}}})
	if !bytes.Contains(raw, []byte(`"error"`)) && !bytes.Contains(raw, []byte(`"isError":true`)) {
		t.Fatalf("openDiff called anyway: %s", raw)
	}
	ed.shows.Store(true)
	if got := strings.Join(names(), ","); got != ide.ToolCloseDiff+","+ide.ToolOpenDiff {
		t.Fatalf("tools/list once the editor shows diffs: %s", got)
	}
}
