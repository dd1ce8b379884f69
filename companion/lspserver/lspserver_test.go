package lspserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLifecycle: initialize names the client and its workspace, the
// answer advertises only what gemkit uses, and shutdown then exit ends Run
// cleanly.
func TestLifecycle(t *testing.T) {
	ws := t.TempDir()
	other := t.TempDir()
	c := start(t, Options{})
	c.request(1, "initialize", map[string]any{
		"processId":        4242,
		"rootUri":          uriOf(other),
		"workspaceFolders": []map[string]any{{"uri": uriOf(ws), "name": "ws"}},
		"clientInfo":       map[string]any{"name": "Neovim", "version": "0.7.2"},
		"capabilities":     nvimCaps,
	})
	m := c.next()
	caps := m["result"].(map[string]any)["capabilities"].(map[string]any)
	for _, k := range []string{"textDocumentSync", "documentHighlightProvider", "codeActionProvider", "executeCommandProvider", "workspace"} {
		if caps[k] == nil {
			t.Errorf("capability %s not advertised: %s", k, js(caps))
		}
	}
	for _, k := range []string{"hoverProvider", "completionProvider", "definitionProvider"} {
		if caps[k] != nil {
			t.Errorf("capability %s advertised: it would answer the person's own requests with nothing", k)
		}
	}
	in := <-c.init
	if in.ProcessID != 4242 || in.ClientName != "Neovim" || len(in.Workspace) != 1 || in.Workspace[0] != ws {
		t.Fatalf("Init = %+v; want pid 4242, Neovim, workspace %s (folders win over rootUri)", in, ws)
	}
	c.notification("initialized", map[string]any{})
	c.request(2, "shutdown", nil)
	if m := c.next(); m["id"] != float64(2) || m["error"] != nil {
		t.Fatalf("shutdown answered %s", js(m))
	}
	c.notification("exit", nil)
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("Run after shutdown and exit = %v", err)
		}
		c.done <- nil
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return on exit")
	}
}

// TestRootURIWorkspace: without workspaceFolders, rootUri is the
// workspace; then didChangeWorkspaceFolders replaces folders.
func TestRootURIWorkspace(t *testing.T) {
	ws, added := t.TempDir(), t.TempDir()
	c := start(t, Options{})
	in := c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	if in.ProcessID != 0 || len(in.Workspace) != 1 || in.Workspace[0] != ws {
		t.Fatalf("Init = %+v", in)
	}
	c.notification("workspace/didChangeWorkspaceFolders", map[string]any{"event": map[string]any{
		"added": []map[string]any{{"uri": uriOf(added), "name": "b"}}, "removed": []map[string]any{{"uri": uriOf(ws), "name": "a"}},
	}})
	c.ev.wait(t, "workspace ["+added+"]")
}

// TestBadInput: each mistake gets a JSON-RPC error where one is due and a
// line on stderr, and reading goes on.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name, send string
		code       float64 // 0: no answer
		log        string
	}{
		{"no content-length", "Content-Type: application/vscode-jsonrpc\r\n\r\n", 0, "no Content-Length"},
		{"bad header line", "Content-Length 12\r\n\r\n", 0, "is not \\\"Name: value\\\""},
		{"bad length", "Content-Length: twelve\r\n\r\n", 0, "is not a byte count"},
		{"not json", "Content-Length: 5\r\n\r\nhello", CodeParseError, "Parse error"},
		{"array", "Content-Length: 2\r\n\r\n[]", CodeInvalidRequest, "batches"},
		{"before initialize", string(frame([]byte(`{"jsonrpc":"2.0","id":7,"method":"textDocument/documentHighlight","params":{}}`))), CodeServerNotInitialized, "send initialize first"},
		{"notification before initialize", string(frame([]byte(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{}}`))), 0, "notification before initialize dropped"},
		{"wrong jsonrpc", string(frame([]byte(`{"jsonrpc":"1.0","id":3,"method":"shutdown"}`))), CodeInvalidRequest, `jsonrpc must be`},
		{"latin-1", string(frame([]byte("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":\"\xe9\"}"))), CodeInvalidParams, "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, Options{})
			c.raw(tc.send)
			if tc.code != 0 {
				m := c.next()
				e, _ := m["error"].(map[string]any)
				if e == nil || e["code"] != tc.code {
					t.Fatalf("answer %s; want error %v", js(m), tc.code)
				}
			}
			// Reading goes on: initialize still works.
			c.initialize(map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
			if !strings.Contains(c.logText(), tc.log) {
				t.Fatalf("log %q does not say %q", c.logText(), tc.log)
			}
		})
	}
}

// TestBadInputAfterInitialize: unknown methods, a second initialize,
// requests after shutdown, an over-long message.
func TestBadInputAfterInitialize(t *testing.T) {
	c := start(t, Options{MaxMessage: 1000})
	c.initialize(map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
	expect := func(code float64) {
		t.Helper()
		m := c.next()
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != code {
			t.Fatalf("answer %s; want error %v", js(m), code)
		}
	}
	c.request("a", "textDocument/definition", map[string]any{})
	expect(CodeMethodNotFound)
	c.notification("textDocument/unknownNotification", map[string]any{}) // ignored, no answer
	c.request(2, "initialize", map[string]any{})
	expect(CodeInvalidRequest)
	c.request(3, "textDocument/documentHighlight", "not an object")
	expect(CodeInvalidParams)
	c.raw(string(frame([]byte(`{"jsonrpc":"2.0","id":4,"method":"x","params":"` + strings.Repeat("a", 2000) + `"}`))))
	expect(CodeInvalidRequest)
	c.request(5, "shutdown", nil)
	c.next()
	c.request(6, "textDocument/documentHighlight", map[string]any{})
	expect(CodeInvalidRequest)
}

// TestExitWithoutShutdown: Run returns ErrNoShutdown (the server's exit
// code is then 1, as LSP says).
func TestExitWithoutShutdown(t *testing.T) {
	c := start(t, Options{})
	c.initialize(map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
	c.notification("exit", nil)
	select {
	case err := <-c.done:
		if !errors.Is(err, ErrNoShutdown) {
			t.Fatalf("Run = %v, want ErrNoShutdown", err)
		}
		c.done <- nil
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return on exit")
	}
}

// TestShutdownHookBeforeAnswer: Options.Shutdown runs on the client's
// shutdown request before the answer is written (lsp-mode kills the
// server right after its exit notification, so the companion's files must
// be gone by the time shutdown is answered), and the server still waits
// for exit.
func TestShutdownHookBeforeAnswer(t *testing.T) {
	called, release := make(chan struct{}), make(chan struct{})
	c := start(t, Options{Shutdown: func() {
		close(called)
		<-release
	}})
	c.initialize(map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
	c.request(9, "shutdown", nil)
	select {
	case <-called:
	case <-time.After(waitTimeout):
		t.Fatal("Shutdown was not called on the shutdown request")
	}
	select {
	case m := <-c.frames:
		t.Fatalf("answered %s before Shutdown returned", js(m))
	case <-time.After(100 * time.Millisecond):
	}
	// While the hook runs, the client's messages are still read: the
	// companion it stops may wait for an answer from the client.
	a := filepath.Join(t.TempDir(), "a.go")
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(a), "languageId": "go", "version": 1, "text": "package a\n"}})
	c.ev.wait(t, "focus "+a)
	close(release)
	if m := c.next(); m["id"] != float64(9) || m["error"] != nil {
		t.Fatalf("answer to shutdown: %s", js(m))
	}
	select {
	case err := <-c.done:
		t.Fatalf("Run returned %v before exit", err)
	case <-time.After(100 * time.Millisecond):
	}
	c.notification("exit", nil)
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("Run = %v after shutdown and exit", err)
		}
		c.done <- nil
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return on exit")
	}
}

// TestStartFails: a companion that cannot start fails initialize with its
// reason.
func TestStartFails(t *testing.T) {
	out := &gemkittest.Output{}
	in := strings.NewReader(string(frame([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`))))
	s := New(in, out, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err := s.Run(context.Background(), func(Init) (companion.Events, error) { return nil, errors.New("no port") })
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "could not start its IDE companion: no port") {
		t.Fatalf("answer %q", got)
	}
}

// TestContext: open files, the active file and cursor, and a selection
// from a code action's range (positions in UTF-16 code units).
func TestContext(t *testing.T) {
	ws := t.TempDir()
	a := filepath.Join(ws, "a.go")
	text := "package a\n// 😀 smile\nfunc A() {}\n"
	if err := os.WriteFile(a, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{})
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": nvimCaps})
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(a), "languageId": "go", "version": 0, "text": text}})
	c.ev.wait(t, "focus "+a)
	c.request(2, "textDocument/documentHighlight", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "position": map[string]any{"line": 2, "character": 5}})
	if m := c.next(); js(m["result"]) != "[]" {
		t.Fatalf("documentHighlight answered %s, want []", js(m))
	}
	c.ev.wait(t, "selection "+a+" 3:6 \"\"")
	// "😀 smile" starts at UTF-16 character 3 and is 8 units long.
	c.request(3, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uriOf(a)},
		"range":        map[string]any{"start": map[string]any{"line": 1, "character": 3}, "end": map[string]any{"line": 1, "character": 11}},
		"context":      map[string]any{"diagnostics": []any{}},
	})
	if m := c.next(); js(m["result"]) != "[]" {
		t.Fatalf("codeAction with no proposal answered %s, want []", js(m))
	}
	c.ev.wait(t, "selection "+a+" 2:12 \"😀 smile\"")
	// Unsaved text counts.
	c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uriOf(a), "version": 1}, "contentChanges": []map[string]any{{"text": "x\ny\n"}}})
	c.request(4, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uriOf(a)},
		"range":        map[string]any{"start": map[string]any{"line": 0, "character": 0}, "end": map[string]any{"line": 1, "character": 1}},
		"context":      map[string]any{"diagnostics": []any{}},
	})
	c.next()
	c.ev.wait(t, "selection "+a+" 2:2 \"x\\ny\"")
	c.notification("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}})
	c.ev.wait(t, "close "+a)
	// Other schemes never enter the context.
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": "untitled:Untitled-1", "languageId": "go", "version": 0, "text": ""}})
}

// TestSelectionKept: a position request at the end of the last selection
// keeps it (eglot asks for the highlights at point right after a code
// action on the region); anywhere else but its start (below) it ends.
func TestSelectionKept(t *testing.T) {
	ws := t.TempDir()
	a := filepath.Join(ws, "a.py")
	text := "def main():\n    pass\n"
	if err := os.WriteFile(a, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{})
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(a), "languageId": "python", "version": 0, "text": text}})
	pos := func(line, char int) map[string]any { return map[string]any{"line": line, "character": char} }
	c.request(2, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "range": map[string]any{"start": pos(0, 0), "end": pos(0, 8)}, "context": map[string]any{}})
	c.next()
	c.request(3, "textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "position": pos(0, 8)})
	if m := c.next(); m["id"] != float64(3) || js(m["result"]) != "null" {
		t.Fatalf("hover answered %s", js(m))
	}
	c.request(4, "textDocument/documentHighlight", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "position": pos(1, 2)})
	c.next()
	c.ev.wait(t, "selection "+a+" 2:3 \"\"")
	c.ev.mu.Lock()
	got := append([]string(nil), c.ev.events...)
	c.ev.mu.Unlock()
	want := []string{"focus " + a, "selection " + a + " 1:9 \"def main\"", "selection " + a + " 1:9 \"def main\"", "selection " + a + " 2:3 \"\""}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSelectionKeptAtStart: a position request at the start of the last
// selection keeps it too. ALE asks for hover where the cursor rests, and
// Vim leaves the cursor at the start of a Visual selection once ":" is
// typed on it (:'<,'>ALECodeAction). Once the cursor has rested anywhere
// else, coming back to that start finds no selection.
func TestSelectionKeptAtStart(t *testing.T) {
	ws := t.TempDir()
	a := filepath.Join(ws, "a.go")
	text := "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	if err := os.WriteFile(a, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{})
	// ALE 3.3.0: no clientInfo, no applyEdit.
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": map[string]any{"workspace": map[string]any{"applyEdit": false}}})
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(a), "languageId": "go", "version": 1, "text": text}})
	pos := func(line, char int) map[string]any { return map[string]any{"line": line, "character": char} }
	hover := func(id, line, char int) {
		c.request(id, "textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "position": pos(line, char)})
		if m := c.next(); m["id"] != float64(id) || js(m["result"]) != "null" {
			t.Fatalf("hover answered %s", js(m))
		}
	}
	// "func main": ALE's range ends after the last selected character.
	c.request(2, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": uriOf(a)}, "range": map[string]any{"start": pos(2, 0), "end": pos(2, 9)}, "context": map[string]any{"diagnostics": []any{}}})
	c.next()
	hover(3, 2, 0)
	hover(4, 3, 1)
	hover(5, 2, 0)
	c.ev.wait(t, "selection "+a+" 3:1 \"\"")
	c.ev.mu.Lock()
	got := append([]string(nil), c.ev.events...)
	c.ev.mu.Unlock()
	want := []string{"focus " + a, "selection " + a + " 3:10 \"func main\"", "selection " + a + " 3:1 \"func main\"", "selection " + a + " 4:2 \"\"", "selection " + a + " 3:1 \"\""}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHoverOnlyForEglot: hover is advertised to eglot (no clientInfo in
// 1.9, "Eglot" later), which reports the cursor only through it, and not
// to Neovim, which would print "No information available".
func TestHoverOnlyForEglot(t *testing.T) {
	for name, want := range map[string]bool{"": true, "Eglot": true, "Neovim": false, "helix": false} {
		caps := initializeResult("", wantsHover(name)).(map[string]any)["capabilities"].(map[string]any)
		if got := caps["hoverProvider"] != nil; got != want {
			t.Errorf("client %q: hoverProvider advertised %v, want %v", name, got, want)
		}
	}
}

// TestShowsDiffs: a client that cannot apply workspace edits (ALE 3.3.0:
// applyEdit false) is one the companion lists no diff tools for, and the
// answer holds from the moment the companion starts, before a CLI can
// ask for its tools.
func TestShowsDiffs(t *testing.T) {
	for _, c := range []struct {
		name  string
		caps  map[string]any
		shows bool
	}{
		{"Neovim 0.7", nvimCaps, true},
		{"ALE 3.3.0", map[string]any{"workspace": map[string]any{"applyEdit": false}}, false},
		{"no capabilities", map[string]any{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := start(t, Options{})
			cl.initialize(map[string]any{"processId": nil, "rootUri": uriOf(t.TempDir()), "capabilities": c.caps})
			if at := <-cl.diffsAtStart; at != c.shows {
				t.Errorf("ShowsDiffs when the companion starts = %v, want %v", at, c.shows)
			}
			if got := cl.srv.ShowsDiffs(); got != c.shows {
				t.Errorf("ShowsDiffs = %v, want %v", got, c.shows)
			}
		})
	}
}
