package companion

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gemkit/gemkit/ide"
)

func cur(l, c int) *ide.Cursor { return &ide.Cursor{Line: l, Character: c} }

// TestOpenFilesRules applies editor events to the open-files state and
// compares the context clients would get.
func TestOpenFilesRules(t *testing.T) {
	dir := t.TempDir()
	f := make([]string, 12)
	for i := range f {
		f[i] = writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), "x")
	}
	missing := filepath.Join(dir, "not-on-disk.txt")
	tests := []struct {
		name   string
		events func(o *openFiles)
		want   []openFileWant
	}{
		{"nothing open", func(o *openFiles) {}, nil},
		{"focus makes the newest file active", func(o *openFiles) {
			o.focus(f[0], cur(1, 1), "a")
			o.focus(f[1], cur(2, 3), "b")
		}, []openFileWant{{f[1], true, cur(2, 3), "b"}, {f[0], false, nil, ""}}},
		{"refocus moves to the front", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(f[1], nil, "")
			o.focus(f[0], cur(4, 4), "")
		}, []openFileWant{{f[0], true, cur(4, 4), ""}, {f[1], false, nil, ""}}},
		{"files not on disk are ignored", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(missing, cur(1, 1), "")
			o.focus("relative.txt", nil, "")
			o.focus(dir, nil, "")
		}, []openFileWant{{f[0], true, nil, ""}}},
		{"selection updates the active file", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.selection(f[0], ide.Cursor{Line: 7, Character: 2}, "sel")
		}, []openFileWant{{f[0], true, cur(7, 2), "sel"}}},
		{"selection in another file focuses it", func(o *openFiles) {
			o.focus(f[0], cur(1, 1), "old")
			o.selection(f[1], ide.Cursor{Line: 2, Character: 2}, "")
		}, []openFileWant{{f[1], true, cur(2, 2), ""}, {f[0], false, nil, ""}}},
		{"at most ten files", func(o *openFiles) {
			for _, p := range f {
				o.focus(p, nil, "")
			}
		}, func() []openFileWant {
			var w []openFileWant
			for i := 11; i >= 2; i-- {
				w = append(w, openFileWant{f[i], i == 11, nil, ""})
			}
			return w
		}()},
		{"close and delete remove", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(f[1], nil, "")
			o.focus(f[2], nil, "")
			o.remove(f[1])
			o.remove(f[2])
		}, []openFileWant{{f[0], false, nil, ""}}},
		{"rename keeps place and state", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(f[1], cur(3, 3), "s")
			o.rename(f[1], f[5])
		}, []openFileWant{{f[5], true, cur(3, 3), "s"}, {f[0], false, nil, ""}}},
		{"rename onto an open file", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(f[1], nil, "")
			o.rename(f[1], f[0])
		}, []openFileWant{{f[0], true, nil, ""}}},
		{"rename to a path not yet on disk (save as) keeps the file", func(o *openFiles) {
			o.focus(f[0], nil, "")
			o.focus(f[1], cur(3, 3), "s")
			o.rename(f[1], missing)
		}, []openFileWant{{missing, true, cur(3, 3), "s"}, {f[0], false, nil, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOpenFiles(time.Hour, func() {})
			defer o.stop()
			tt.events(o)
			got := o.context(nil).WorkspaceState.OpenFiles
			if got == nil {
				t.Fatal("openFiles is nil; it must be an empty list")
			}
			checkOpenFiles(t, got, tt.want)
		})
	}
}

// openFileWant is a file TestOpenFilesRules expects in the context.
type openFileWant struct {
	path   string
	active bool
	cursor *ide.Cursor
	sel    string
}

// checkOpenFiles compares the context's open files with want, in order,
// and checks their timestamps are milliseconds since the epoch, newest
// first and never equal.
func checkOpenFiles(t *testing.T, got []ide.File, want []openFileWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d files, want %d: %+v", len(got), len(want), got)
	}
	var last int64 = 1 << 62
	for i, w := range want {
		g := got[i]
		if g.Path != w.path || g.IsActive != w.active || g.SelectedText != w.sel || fmt.Sprint(g.Cursor) != fmt.Sprint(w.cursor) {
			t.Fatalf("file %d: got %+v (cursor %v), want %+v", i, g, g.Cursor, w)
		}
		if g.Timestamp >= last {
			t.Fatalf("timestamps not strictly newest first: %d then %d", last, g.Timestamp)
		}
		last = g.Timestamp
		if now := time.Now().UnixMilli(); g.Timestamp > now+1000 || g.Timestamp < now-60_000 {
			t.Fatalf("timestamp %d is not milliseconds since the epoch", g.Timestamp)
		}
	}
}

func TestTruncateSelection(t *testing.T) {
	max := ide.MaxSelectedTextLength
	emoji := "😀" // two UTF-16 code units
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"short", "abc", "abc"},
		{"exactly the limit", strings.Repeat("a", max), strings.Repeat("a", max)},
		{"one over", strings.Repeat("a", max+1), strings.Repeat("a", max) + ide.TruncatedSuffix},
		{"multibyte under the limit in units", strings.Repeat("é", max), strings.Repeat("é", max)},
		{"surrogate pair not split", strings.Repeat("a", max-1) + emoji, strings.Repeat("a", max-1) + ide.TruncatedSuffix},
		{"pairs up to the limit", strings.Repeat(emoji, max/2+1), strings.Repeat(emoji, max/2) + ide.TruncatedSuffix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateSelection(tt.in)
			if got != tt.want {
				t.Fatalf("got %d units, want %d", len(utf16.Encode([]rune(got))), len(utf16.Encode([]rune(tt.want))))
			}
		})
	}
}

// TestContextOnFirstGET: a client gets the current context on its first
// event stream, with openFiles as [] (never null) when nothing is open,
// and again on every stream it opens later: the real client clears its
// context when a stream breaks (gemini-cli-core 0.61.0
// dist/src/ide/ide-client.js: onerror sets Disconnected, and setState
// clears ideContextStore) while its SDK reopens the stream.
func TestContextOnFirstGET(t *testing.T) {
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}})
	c := dial(t, srv)
	msg := c.next(ide.MethodContextUpdate, 2*time.Second)
	if string(msg) != `{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"workspaceState":{"openFiles":[]}}}` {
		t.Fatalf("empty context: %s", msg)
	}
	p := writeFile(t, ws, "a.txt", "x")
	srv.Focus(p, cur(2, 3), "sel")
	c.next(ide.MethodContextUpdate, 2*time.Second)

	late := dial(t, srv)
	ctx := contextFrom(t, late.next(ide.MethodContextUpdate, 2*time.Second))
	files := ctx.WorkspaceState.OpenFiles
	if len(files) != 1 || files[0].Path != p || !files[0].IsActive || *files[0].Cursor != *cur(2, 3) || files[0].SelectedText != "sel" {
		t.Fatalf("first GET context: %+v", ctx.WorkspaceState)
	}
	late.closeGET()
	late.openGET()
	again := contextFrom(t, late.next(ide.MethodContextUpdate, 2*time.Second))
	if files := again.WorkspaceState.OpenFiles; len(files) != 1 || files[0].Path != p {
		t.Fatalf("reopened stream's context: %+v", again.WorkspaceState)
	}
}

// TestDebounceAndCoalescing: a burst of editor events becomes one context
// update with the final state, sent once the events settle.
func TestDebounceAndCoalescing(t *testing.T) {
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}})
	c := dial(t, srv)
	c.next(ide.MethodContextUpdate, 2*time.Second) // the first-GET context
	p := writeFile(t, ws, "a.txt", "x")
	start := time.Now()
	for i := range 200 {
		srv.Selection(p, ide.Cursor{Line: i + 1, Character: 1}, "")
	}
	msg := c.next(ide.MethodContextUpdate, 2*time.Second)
	if since := time.Since(start); since < ide.ContextDebounce {
		t.Fatalf("context sent after %v, before the %v debounce", since, ide.ContextDebounce)
	}
	ctx := contextFrom(t, msg)
	if got := ctx.WorkspaceState.OpenFiles[0].Cursor.Line; got != 200 {
		t.Fatalf("coalesced update has line %d, want the last (200)", got)
	}
	c.none(ide.MethodContextUpdate, 3*ide.ContextDebounce)
}

// TestManyContextUpdatesOnlyLatestMatters: updates faster than a client
// reads coalesce instead of overflowing a queue; the last state arrives.
func TestManyContextUpdatesOnlyLatestMatters(t *testing.T) {
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}, Debounce: time.Millisecond})
	c := dial(t, srv)
	p := writeFile(t, ws, "a.txt", "x")
	for i := range 2000 {
		srv.Selection(p, ide.Cursor{Line: i + 1, Character: 1}, "")
		if i%100 == 0 {
			// A sleep: pauses let some debounces pass mid-stream, as a
			// person's keystrokes would.
			time.Sleep(2 * time.Millisecond)
		}
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-c.events:
			if !bytes.Contains(ev, []byte(ide.MethodContextUpdate)) {
				continue
			}
			ctx := contextFrom(t, ev)
			if f := ctx.WorkspaceState.OpenFiles; len(f) == 1 && f[0].Cursor.Line == 2000 {
				return
			}
		case <-deadline:
			t.Fatal("the latest context never arrived")
		}
	}
}

// TestTrustAndWorkspaceUpdate: trust goes to clients as isTrusted, and the
// workspace change rewrites the discovery file.
func TestTrustAndWorkspaceUpdate(t *testing.T) {
	ws, ws2 := t.TempDir(), t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}})
	c := dial(t, srv)
	c.next(ide.MethodContextUpdate, 2*time.Second)
	no := false
	if err := srv.UpdateWorkspace([]string{ws, ws2}, &no); err != nil {
		t.Fatal(err)
	}
	msg := c.next(ide.MethodContextUpdate, 2*time.Second)
	if string(msg) != `{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"workspaceState":{"openFiles":[],"isTrusted":false}}}` {
		t.Fatalf("trust update: %s", msg)
	}
	df := readDiscovery(t, srv.DiscoveryPath())
	if df.WorkspacePath != ws+string(filepath.ListSeparator)+ws2 {
		t.Fatalf("discovery workspacePath after update: %q", df.WorkspacePath)
	}
	if err := srv.UpdateWorkspace([]string{"relative"}, nil); err == nil {
		t.Fatal("a relative workspace folder was accepted")
	}
	if err := srv.UpdateWorkspace([]string{filepath.Join(ws, "missing")}, nil); err == nil {
		t.Fatal("a missing workspace folder was accepted")
	}
	if got := readDiscovery(t, srv.DiscoveryPath()).WorkspacePath; got != df.WorkspacePath {
		t.Fatalf("a refused update changed the discovery file: %q", got)
	}
}

// TestFirstContextEveryConnect: the first-GET context reaches every one of
// many clients (mcp-go's own registration hook loses about half).
func TestFirstContextEveryConnect(t *testing.T) {
	ws := t.TempDir()
	srv := startServer(t, Config{Workspace: []string{ws}})
	srv.Focus(writeFile(t, ws, "a.txt", "x"), nil, "")
	for i := range 100 {
		c := dial(t, srv)
		ctx := contextFrom(t, c.next(ide.MethodContextUpdate, 2*time.Second))
		if len(ctx.WorkspaceState.OpenFiles) != 1 {
			t.Fatalf("connect %d: %+v", i, ctx.WorkspaceState)
		}
		c.close()
	}
}
