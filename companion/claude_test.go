package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// diagEditor is a fakeEditor that also reports diagnostics.
type diagEditor struct {
	*fakeEditor
	files []FileDiagnostics
	asked chan string
}

func (d *diagEditor) Diagnostics(_ context.Context, path string) ([]FileDiagnostics, error) {
	d.asked <- path
	return d.files, nil
}

func claudeURL(srv *Server) string { return "ws://127.0.0.1:" + strconv.Itoa(srv.ClaudePort()) + "/" }

func dialClaude(t *testing.T, srv *Server) *wsClient {
	t.Helper()
	c := dialWS(t, claudeURL(srv), http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}}, "mcp")
	c.initialize()
	c.send(map[string]any{"jsonrpc": "2.0", "method": "ide_connected", "params": map[string]any{"pid": os.Getpid()}})
	return c
}

func TestClaudeLockFileAndGuard(t *testing.T) {
	lockDir := filepath.Join(t.TempDir(), "claude", "ide")
	ws := t.TempDir()
	srv, err := New(Config{Workspace: []string{ws}, PID: os.Getpid(), Claude: true, ClaudeLockDir: lockDir,
		DiscoveryDir: filepath.Join(t.TempDir(), "gemini", "ide"), IDEInfo: ide.IDEInfo{Name: "nvim", DisplayName: "Neovim"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	<-srv.Ready()

	lock := filepath.Join(lockDir, strconv.Itoa(srv.ClaudePort())+".lock")
	if srv.ClaudeLockPath() != lock {
		t.Errorf("lock path %s, want %s", srv.ClaudeLockPath(), lock)
	}
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v, want 0600", fi.Mode().Perm())
	}
	var got discovery.ClaudeLock
	data, _ := os.ReadFile(lock)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := discovery.ClaudeLock{PID: os.Getpid(), WorkspaceFolders: []string{ws}, IDEName: "Neovim", Transport: "ws", AuthToken: srv.ClaudeToken()}
	if got.PID != want.PID || strings.Join(got.WorkspaceFolders, ",") != ws || got.IDEName != want.IDEName || got.Transport != "ws" || got.AuthToken != want.AuthToken {
		t.Errorf("lock = %+v, want %+v", got, want)
	}
	if srv.ClaudeToken() == srv.Token() {
		t.Error("the Claude Code endpoint shares the Gemini token")
	}
	if env := srv.Env(); env["CLAUDE_CODE_SSE_PORT"] != strconv.Itoa(srv.ClaudePort()) {
		t.Errorf("Env lacks CLAUDE_CODE_SSE_PORT: %v", env)
	}

	good := func() http.Header { return http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}} }
	for _, tc := range []struct {
		name   string
		hdr    http.Header
		status int
	}{
		{"no token", http.Header{}, http.StatusUnauthorized},
		{"wrong token", http.Header{ClaudeAuthHeader: {srv.ClaudeToken() + "x"}}, http.StatusUnauthorized},
		{"gemini token", http.Header{ClaudeAuthHeader: {srv.Token()}}, http.StatusUnauthorized},
		{"origin", func() http.Header { h := good(); h.Set("Origin", "http://127.0.0.1"); return h }(), http.StatusForbidden},
		{"host", func() http.Header {
			h := good()
			h.Set("Host", "evil.example:"+strconv.Itoa(srv.ClaudePort()))
			return h
		}(), http.StatusForbidden},
		{"good", good(), http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dialStatus(t, claudeURL(srv), tc.hdr); got != tc.status {
				t.Errorf("status %d, want %d", got, tc.status)
			}
		})
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file still there after stop: %v", err)
	}
}

func TestClaudeOpenDiffOutcomes(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	ws := srv.workspaceSnapshot()[0]
	path := writeFile(t, ws, "a.txt", "old\n")

	// A Gemini client with its event stream open must not hear of
	// Claude Code's diffs.
	gem := dial(t, srv)
	defer gem.close()

	cc := dialClaude(t, srv)
	for _, tc := range []struct {
		name   string
		answer func()
		want   []string
	}{
		{"accepted with an edit", func() { srv.DiffAccepted(path, "edited by the person\n") }, []string{"FILE_SAVED", "edited by the person\n"}},
		{"rejected", func() { srv.DiffRejected(path) }, []string{"DIFF_REJECTED", "tab-rejected"}},
		{"tab closed", func() {
			cc2 := dialClaude(t, srv)
			if r := cc2.tool("close_tab", map[string]any{"tab_name": "tab-tab closed"}, 10*time.Second); r.IsError {
				t.Errorf("close_tab: %v", r.texts())
			}
		}, []string{"TAB_CLOSED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := "tab-" + strings.Fields(tc.name)[0]
			if tc.name == "tab closed" {
				tab = "tab-tab closed"
			}
			res := make(chan wsToolResult, 1)
			go func() {
				res <- cc.tool("openDiff", map[string]any{"old_file_path": path, "new_file_path": path, "new_file_contents": "proposed\n", "tab_name": tab}, 20*time.Second)
			}()
			select {
			case req := <-ed.openCh:
				if req.FilePath != path || req.NewContent != "proposed\n" {
					t.Errorf("editor got %+v", req)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the editor was not asked to open the diff")
			}
			tc.answer()
			r := <-res
			if r.IsError || strings.Join(r.texts(), "|") != strings.Join(tc.want, "|") {
				t.Errorf("openDiff = %q (error %v), want %q", r.texts(), r.IsError, tc.want)
			}
		})
	}
	gem.none(ide.MethodDiffAccepted, 300*time.Millisecond)
	gem.none(ide.MethodDiffRejected, 0)
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Errorf("the companion changed the file: %q", b)
	}
}

func TestClaudeGeminiDiffsStayApart(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	ws := srv.workspaceSnapshot()[0]
	gPath := writeFile(t, ws, "g.txt", "g\n")
	cPath := writeFile(t, ws, "c.txt", "c\n")
	gem := dial(t, srv)
	defer gem.close()
	cc := dialClaude(t, srv)

	res := make(chan wsToolResult, 1)
	go func() {
		res <- cc.tool("openDiff", map[string]any{"old_file_path": cPath, "new_file_path": cPath, "new_file_contents": "C\n", "tab_name": "c"}, 20*time.Second)
	}()
	<-ed.openCh
	if r, _ := gem.callTool(ide.ToolOpenDiff, map[string]any{"filePath": gPath, "newContent": "G\n"}); r.IsError {
		t.Fatalf("gemini openDiff failed")
	}
	<-ed.openCh
	srv.DiffAccepted(gPath, "G!\n")
	msg := gem.next(ide.MethodDiffAccepted, 10*time.Second)
	if !strings.Contains(string(msg), "G!") {
		t.Errorf("gemini got %s", msg)
	}
	select {
	case r := <-res:
		t.Fatalf("Claude Code's openDiff answered by Gemini's outcome: %v", r.texts())
	case <-time.After(200 * time.Millisecond):
	}
	srv.DiffAccepted(cPath, "C!\n")
	if r := <-res; strings.Join(r.texts(), "|") != "FILE_SAVED|C!\n" {
		t.Errorf("claude got %q", r.texts())
	}
	gem.none(ide.MethodDiffAccepted, 300*time.Millisecond)
}

// TestSelectionRange checks the ranges Claude Code counts lines from
// (end.line-start.line+1, one less when end.character is 0: the
// selection_changed handler of Claude Code 2.1.330's bundled CLI).
func TestSelectionRange(t *testing.T) {
	tests := []struct {
		name   string
		cursor ide.Cursor
		text   string
		want   claudeRange
		lines  int
	}{
		{"no selection", ide.Cursor{Line: 3, Character: 5}, "", claudeRange{claudePos{2, 4}, claudePos{2, 4}}, 1},
		{"V j: two whole lines, cursor at column 1", ide.Cursor{Line: 2, Character: 1}, "one\ntwo", claudeRange{claudePos{0, 0}, claudePos{1, 3}}, 2},
		{"V: one whole line, cursor at column 1", ide.Cursor{Line: 4, Character: 1}, "four", claudeRange{claudePos{3, 0}, claudePos{3, 4}}, 1},
		{"v: characters, cursor on the last", ide.Cursor{Line: 1, Character: 3}, "wo", claudeRange{claudePos{0, 1}, claudePos{0, 3}}, 1},
		{"region ending at the start of the next line", ide.Cursor{Line: 3, Character: 1}, "one\ntwo\n", claudeRange{claudePos{0, 0}, claudePos{2, 0}}, 2},
		{"last line counted in UTF-16", ide.Cursor{Line: 2, Character: 1}, "a\né😀", claudeRange{claudePos{0, 0}, claudePos{1, 3}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := selectionRange(tt.cursor, tt.text)
			if got != tt.want {
				t.Errorf("selectionRange(%+v, %q) = %+v, want %+v", tt.cursor, tt.text, got, tt.want)
			}
			lines := got.End.Line - got.Start.Line + 1
			if got.End.Character == 0 && tt.text != "" {
				lines--
			}
			if lines != tt.lines {
				t.Errorf("Claude Code counts %d lines, want %d", lines, tt.lines)
			}
		})
	}
}

func TestClaudeSelectionMentionDiagnostics(t *testing.T) {
	ed := &diagEditor{fakeEditor: newFakeEditor(), asked: make(chan string, 10)}
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir(), Debounce: time.Millisecond})
	ws := srv.workspaceSnapshot()[0]
	path := writeFile(t, ws, "m.go", "a\nb\nc\n")
	ed.files = []FileDiagnostics{{Path: path, Diagnostics: []Diagnostic{{Message: "undefined: x", Severity: ide.SevError, Source: "gopls", Code: "E1",
		Range: ide.Range{Start: ide.Position{Line: 1, Character: 0}, End: ide.Position{Line: 1, Character: 1}}}}}}
	cc := dialClaude(t, srv)

	srv.Selection(path, ide.Cursor{Line: 3, Character: 1}, "b\nc")
	for {
		var p struct {
			Selection claudeRange `json:"selection"`
			Text      string      `json:"text"`
			FilePath  string      `json:"filePath"`
		}
		if err := json.Unmarshal(cc.next("selection_changed", 10*time.Second), &p); err != nil {
			t.Fatal(err)
		}
		if p.Text == "" {
			continue // the state before the selection
		}
		want := claudeRange{Start: claudePos{Line: 1}, End: claudePos{Line: 2, Character: 1}}
		if p.FilePath != path || p.Text != "b\nc" || p.Selection != want {
			t.Errorf("selection_changed = %+v", p)
		}
		break
	}

	srv.Mention(path, 2, 3)
	var m map[string]any
	_ = json.Unmarshal(cc.next("at_mentioned", 10*time.Second), &m)
	if m["filePath"] != path || m["lineStart"] != 1.0 || m["lineEnd"] != 2.0 {
		t.Errorf("at_mentioned = %v", m)
	}

	r := cc.tool("getDiagnostics", map[string]any{"uri": "file://" + path}, 10*time.Second)
	if p := <-ed.asked; p != path {
		t.Errorf("editor asked for %q", p)
	}
	want := `[{"uri":"file://` + path + `","diagnostics":[{"message":"undefined: x","severity":"Error","source":"gopls","code":"E1","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}}]}]`
	if r.IsError || len(r.Content) != 1 || r.Content[0].Text != want {
		t.Errorf("getDiagnostics = %q, want %s", r.texts(), want)
	}
	if r := cc.tool("closeAllDiffTabs", map[string]any{}, 10*time.Second); r.IsError || r.texts()[0] != "CLOSED_0_DIFF_TABS" {
		t.Errorf("closeAllDiffTabs = %q", r.texts())
	}
}

func TestClaudeOffByDefault(t *testing.T) {
	srv := startServer(t, Config{})
	if srv.ClaudePort() != 0 || srv.ClaudeLockPath() != "" {
		t.Error("Claude Code endpoint on without Config.Claude")
	}
	if _, ok := srv.Env()["CLAUDE_CODE_SSE_PORT"]; ok {
		t.Error("CLAUDE_CODE_SSE_PORT in Env without Config.Claude")
	}
}

func TestStreamEndpoint(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Debounce: time.Millisecond})
	ws := srv.workspaceSnapshot()[0]
	path := writeFile(t, ws, "s.txt", "s\n")
	url := "ws://127.0.0.1:" + strconv.Itoa(srv.Port()) + StreamPath

	if got := dialStatus(t, url, http.Header{}); got != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", got)
	}
	if got := dialStatus(t, url, http.Header{"Authorization": {"Bearer " + srv.Token()}, "Origin": {"http://x"}}); got != http.StatusForbidden {
		t.Errorf("origin: status %d, want 403", got)
	}
	c := dialWS(t, url, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
	c.initialize()
	c.next(ide.MethodContextUpdate, 10*time.Second)
	var tools struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	_ = json.Unmarshal(c.call("tools/list", map[string]any{}, 10*time.Second), &tools)
	if len(tools.Tools) != 2 {
		t.Errorf("tools = %+v", tools)
	}
	srv.Focus(path, nil, "")
	for {
		var ctx ide.Context
		_ = json.Unmarshal(c.next(ide.MethodContextUpdate, 10*time.Second), &ctx)
		if len(ctx.WorkspaceState.OpenFiles) == 1 {
			break
		}
	}
	if r := c.tool(ide.ToolOpenDiff, map[string]any{"filePath": path, "newContent": "S\n"}, 10*time.Second); r.IsError {
		t.Fatalf("openDiff: %v", r.texts())
	}
	srv.DiffRejected(path)
	if p := c.next(ide.MethodDiffRejected, 10*time.Second); !strings.Contains(string(p), "s.txt") {
		t.Errorf("diffRejected = %s", p)
	}
}

// An editor without diagnostics (the terminal front-end, a plugin without
// diagnostics/get) reports none: getDiagnostics answers an empty list.
func TestClaudeDiagnosticsWithoutEditorSupport(t *testing.T) {
	srv := startServer(t, Config{Editor: newFakeEditor(), Claude: true, ClaudeLockDir: t.TempDir()})
	cc := dialClaude(t, srv)
	if r := cc.tool("getDiagnostics", map[string]any{}, 10*time.Second); r.IsError || r.texts()[0] != "[]" {
		t.Errorf("getDiagnostics = %q", r.texts())
	}
}

// ownDiags is a Config.Diagnostics: gemkit's own language servers in
// the companion's tests.
type ownDiags struct{ path string }

func (o ownDiags) Diagnostics(_ context.Context, path string) ([]FileDiagnostics, error) {
	return []FileDiagnostics{{Path: o.path, Diagnostics: []Diagnostic{{Message: "undefined: x", Severity: ide.SevError, Source: "compiler",
		Range: ide.Range{Start: ide.Position{Line: 2, Character: 1}, End: ide.Position{Line: 2, Character: 2}}}}}}, nil
}

// An editor without diagnostics of its own gives way to
// Config.Diagnostics (gemkit's own language servers): getDiagnostics
// answers with theirs, in 0-based LSP ranges.
func TestClaudeDiagnosticsFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "main.go")
	srv := startServer(t, Config{Editor: newFakeEditor(), Claude: true, ClaudeLockDir: t.TempDir(), Diagnostics: ownDiags{path}})
	cc := dialClaude(t, srv)
	r := cc.tool("getDiagnostics", map[string]any{"uri": "file://" + path}, 10*time.Second)
	want := `[{"uri":"file://` + path + `","diagnostics":[{"message":"undefined: x","severity":"Error","source":"compiler","range":{"start":{"line":2,"character":1},"end":{"line":2,"character":2}}}]}]`
	if r.IsError || r.texts()[0] != want {
		t.Errorf("getDiagnostics = %q, want %s", r.texts(), want)
	}
}

func TestWebSocketBounds(t *testing.T) {
	t.Run("message too big", func(t *testing.T) {
		srv := startServer(t, Config{Claude: true, ClaudeLockDir: t.TempDir()})
		c := dialWS(t, claudeURL(srv), http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}}, "mcp")
		big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", ide.MaxRequestBody) + `"}}`
		_ = c.c.Write(context.Background(), 1, []byte(big))
		select {
		case _, ok := <-c.notes:
			if ok {
				t.Error("a message came back instead of the close")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the connection stayed open after an over-long message")
		}
	})
	t.Run("peer that answers no ping", func(t *testing.T) {
		srv := startServer(t, Config{Claude: true, ClaudeLockDir: t.TempDir(), PingInterval: 500 * time.Millisecond})
		c, _, err := websocketDial(claudeURL(srv), http.Header{ClaudeAuthHeader: {srv.ClaudeToken()}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		// Not reading means not answering pings: after an interval and a
		// wait of one more, the server drops the peer.
		peers := func() int {
			srv.claude.mu.Lock()
			defer srv.claude.mu.Unlock()
			return len(srv.claude.peers)
		}
		// The ping timeout drops the peer inside the server, which tells
		// no one.
		var n int
		var seen bool
		if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
			if n = peers(); n == 1 {
				seen = true
			}
			return seen && n == 0
		}) {
			t.Fatalf("the peer is still connected (peers: %d, seen: %v)", n, seen)
		}
	})
}

// A Gemini client's closeDiff of a file whose diff Claude Code opened
// closes it for Claude Code too.
func TestGeminiCloseDiffOfClaudeDiff(t *testing.T) {
	ed := newFakeEditor()
	srv := startServer(t, Config{Editor: ed, Claude: true, ClaudeLockDir: t.TempDir()})
	path := writeFile(t, srv.workspaceSnapshot()[0], "x.txt", "x\n")
	cc := dialClaude(t, srv)
	gem := dial(t, srv)
	defer gem.close()
	res := make(chan wsToolResult, 1)
	go func() {
		res <- cc.tool("openDiff", map[string]any{"old_file_path": path, "new_file_path": path, "new_file_contents": "X\n", "tab_name": "x"}, 20*time.Second)
	}()
	<-ed.openCh
	if r, raw := gem.callTool(ide.ToolCloseDiff, map[string]any{"filePath": path}); r.IsError {
		t.Fatalf("closeDiff: %s", raw)
	}
	select {
	case r := <-res:
		if strings.Join(r.texts(), "|") != "TAB_CLOSED" {
			t.Errorf("openDiff = %q", r.texts())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Claude Code's openDiff still waits after the diff was closed")
	}
}

// slowOwn stands for gemkit's own servers that must start first: each
// call waits for release, and records whether its context had ended by
// then. They serve Go files.
type slowOwn struct {
	path    string
	release chan struct{}
	mu      sync.Mutex
	ended   []bool
}

func (o *slowOwn) Diagnostics(ctx context.Context, _ string) ([]FileDiagnostics, error) {
	<-o.release
	o.mu.Lock()
	o.ended = append(o.ended, ctx.Err() != nil)
	o.mu.Unlock()
	return []FileDiagnostics{{Path: o.path, Diagnostics: []Diagnostic{{Message: "from gemkit's own server", Severity: ide.SevError}}}}, nil
}

func (o *slowOwn) Serves(path string) bool { return strings.HasSuffix(path, ".go") }

func (o *slowOwn) answered() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ended)
}

// shownEditor is a langEditor with a client for Go files only (none
// for every file), which shows a warning in notes.txt and one in lib.go.
type shownEditor struct {
	clientsByExt
	notes, lib string
}

func (e *shownEditor) LSPClients(_ context.Context, path string) ([]ide.LSPClient, error) {
	if strings.HasSuffix(path, ".go") {
		return []ide.LSPClient{{Name: "gopls"}}, nil
	}
	return nil, nil
}

func (e *shownEditor) Diagnostics(context.Context, string) ([]FileDiagnostics, error) {
	return []FileDiagnostics{
		{Path: e.notes, Diagnostics: []Diagnostic{{Message: "what the editor shows", Severity: ide.SevWarning}}},
		{Path: e.lib, Diagnostics: []Diagnostic{{Message: "what the editor shows in lib.go", Severity: ide.SevWarning}}},
	}, nil
}

// Claude Code gives up on getDiagnostics after 500 ms for a file and 2 s
// for all of them: the answer comes within less. While gemkit's own
// servers are still starting, it holds what is complete without them:
// a file they do not serve, with what the editor shows; all files but
// those they serve (lib.go), since Claude Code would take their problems,
// once in, for new ones. They go on starting, and answer the next call.
// The editor's clients settle for no longer than leaves time for the
// answer.
func TestClaudeDiagnosticsInTime(t *testing.T) {
	ws := t.TempDir()
	notes, lib, main := filepath.Join(ws, "notes.txt"), filepath.Join(ws, "lib.go"), filepath.Join(ws, "main.go")
	ed := &shownEditor{clientsByExt: clientsByExt{langEditor: langEditor{fakeEditor: newFakeEditor()}}, notes: notes, lib: lib}
	own := &slowOwn{path: lib, release: make(chan struct{})}
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}, Claude: true, ClaudeLockDir: t.TempDir(), Diagnostics: own})
	cc := dialClaude(t, srv)

	// gemkit's own servers do not answer until released: an answer
	// now is one that did not wait for them.
	r := cc.tool("getDiagnostics", map[string]any{"uri": "file://" + notes}, 10*time.Second)
	if r.IsError || !strings.Contains(r.texts()[0], "what the editor shows") || strings.Contains(r.texts()[0], "own server") {
		t.Errorf("getDiagnostics(notes.txt) = %q, want the editor's alone", r.texts())
	}
	r = cc.tool("getDiagnostics", map[string]any{}, 10*time.Second)
	if text := r.texts()[0]; r.IsError || !strings.Contains(text, "notes.txt") || strings.Contains(text, "lib.go") {
		t.Errorf("getDiagnostics() = %q, want notes.txt's alone", r.texts())
	}
	close(own.release)
	waitFor(t, func() bool { return own.answered() == 2 })
	if own.ended[0] || own.ended[1] {
		t.Error("gemkit's own servers were stopped when the answer went without them")
	}
	r = cc.tool("getDiagnostics", map[string]any{}, 10*time.Second)
	if text := r.texts()[0]; r.IsError || !strings.Contains(text, "notes.txt") || !strings.Contains(text, "in lib.go") || !strings.Contains(text, "own server") {
		t.Errorf("getDiagnostics() = %q, want the editor's and gemkit's own servers'", r.texts())
	}

	r = cc.tool("getDiagnostics", map[string]any{"uri": "file://" + main}, 10*time.Second)
	if r.IsError || len(ed.settled) != 1 || ed.settled[0] > claudeFileDiagnosticsBudget-answerMargin {
		t.Errorf("getDiagnostics(main.go) = %q; the editor's clients settled for %v, want at most %v", r.texts(), ed.settled, claudeFileDiagnosticsBudget-answerMargin)
	}

	// A front-end with no diagnostics of its own (the terminal): a file
	// gemkit's servers serve, asked while they start, is an error, not
	// an answer without their problems.
	late := &slowOwn{path: lib, release: make(chan struct{})}
	t.Cleanup(func() { close(late.release) })
	term := startServer(t, Config{Editor: newFakeEditor(), Workspace: []string{ws}, Claude: true, ClaudeLockDir: t.TempDir(), Diagnostics: late})
	tc := dialClaude(t, term)
	if r := tc.tool("getDiagnostics", map[string]any{"uri": "file://" + lib}, 10*time.Second); !r.IsError || !strings.Contains(r.texts()[0], "did not answer in time") {
		t.Errorf("getDiagnostics(lib.go) while gemkit's servers start = %q, want an error", r.texts())
	}
	if r := tc.tool("getDiagnostics", map[string]any{"uri": "file://" + notes}, 10*time.Second); r.IsError || r.texts()[0] != "[]" {
		t.Errorf("getDiagnostics(notes.txt) while gemkit's servers start = %q, want none", r.texts())
	}
}

// pairedEditor answers lsp/clients only once what it shows was asked
// (as an editor busy for longer than Claude Code's budget for a file
// would answer two requests in turn), and counts the asks; noClients
// makes it an editor that lends no clients: it answers lsp/clients with
// JSON-RPC's -32601, as gemkit.nvim and gemkit.el answer a method they
// lack (editors/nvim/lua/gemkit/init.lua, editors/emacs/gemkit.el).
type pairedEditor struct {
	*shownEditor
	noClients bool
	shown     chan struct{}
	asks      atomic.Int32
}

func (e *pairedEditor) LSPClients(ctx context.Context, path string) ([]ide.LSPClient, error) {
	select {
	case <-e.shown:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.noClients {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
	}
	return e.shownEditor.LSPClients(ctx, path)
}

func (e *pairedEditor) Diagnostics(ctx context.Context, path string) ([]FileDiagnostics, error) {
	if e.asks.Add(1) == 1 {
		close(e.shown)
	}
	return e.shownEditor.Diagnostics(ctx, path)
}

// A file's diagnostics take one round trip to the editor, not two: what
// it shows is asked with its clients, and an editor that lends none is
// not asked twice.
func TestDiagnosticsOneRoundTrip(t *testing.T) {
	for _, noClients := range []bool{false, true} {
		t.Run(fmt.Sprintf("noClients=%v", noClients), func(t *testing.T) {
			ws := t.TempDir()
			notes := filepath.Join(ws, "notes.txt")
			ed := &pairedEditor{
				shownEditor: &shownEditor{clientsByExt: clientsByExt{langEditor: langEditor{fakeEditor: newFakeEditor()}}, notes: notes, lib: filepath.Join(ws, "lib.go")},
				noClients:   noClients,
				shown:       make(chan struct{}),
			}
			own := &slowOwn{release: make(chan struct{})}
			t.Cleanup(func() { close(own.release) })
			srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}, Claude: true, ClaudeLockDir: t.TempDir(), Diagnostics: own})
			r := dialClaude(t, srv).tool("getDiagnostics", map[string]any{"uri": "file://" + notes}, 10*time.Second)
			if r.IsError || !strings.Contains(r.texts()[0], "what the editor shows") {
				t.Errorf("getDiagnostics(notes.txt) = %q, want the editor's warning", r.texts())
			}
			if n := ed.asks.Load(); n != 1 {
				t.Errorf("the editor was asked for what it shows %d times, want once", n)
			}
		})
	}
}

// TestClaudeLockOfEarlierCompanion: the lock file that a killed companion
// of the same editor left (the editor's pid, alive; a port nobody serves)
// is removed when the next one starts, so that Claude Code, which keeps a
// lock file whose pid runs and connects only when exactly one names its
// folder, finds the live companion alone. Another editor's file, and a
// file of this editor whose port is served, stay.
func TestClaudeLockOfEarlierCompanion(t *testing.T) {
	lockDir := filepath.Join(t.TempDir(), "claude", "ide")
	ws := t.TempDir()
	served := gemkittest.ServedPort(t)
	dead := gemkittest.ClosedPort(t)
	write := func(port, pid int) string {
		t.Helper()
		path, err := discovery.WriteClaudeLock(lockDir, port, discovery.ClaudeLock{PID: pid, WorkspaceFolders: []string{ws}, IDEName: "Neovim", Transport: "ws", AuthToken: "old"})
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	stale := write(dead, os.Getpid())
	otherEditor := write(dead+1, os.Getppid())
	live := write(served, os.Getpid())

	srv := startServer(t, Config{Workspace: []string{ws}, PID: os.Getpid(), Claude: true, ClaudeLockDir: lockDir})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file of this editor's killed companion is still there: %v", err)
	}
	for _, p := range []string{otherEditor, live, srv.ClaudeLockPath()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
