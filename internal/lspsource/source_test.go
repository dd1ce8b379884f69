package lspsource

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// plainEditor is an editor without language clients (as the terminal
// front-end is).
type plainEditor struct{}

func (plainEditor) OpenDiff(context.Context, string, string) error { return nil }
func (plainEditor) CloseDiff(context.Context, string) (string, bool, error) {
	return "", false, nil
}
func (plainEditor) FileWritten(context.Context, string) error { return nil }

// scriptedEditor answers the language requests from a table: by LSP
// method, the clients and their answers; it records what it is asked.
type scriptedEditor struct {
	plainEditor
	mu      sync.Mutex
	clients []ide.LSPClient
	answers map[string]ide.LSPRequestResult
	asked   []ide.LSPRequestParams
	changed [][]string
	diags   []companion.FileDiagnostics
	settle  time.Duration
}

func (e *scriptedEditor) LSPClients(_ context.Context, path string) ([]ide.LSPClient, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if strings.HasSuffix(path, ".txt") {
		return nil, nil
	}
	return e.clients, nil
}

func (e *scriptedEditor) LSPRequest(_ context.Context, p ide.LSPRequestParams) (ide.LSPRequestResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, p)
	return e.answers[p.Method], nil
}

func (e *scriptedEditor) LSPChanged(_ context.Context, paths []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changed = append(e.changed, paths)
	return nil
}

func (e *scriptedEditor) LSPUnsaved(context.Context) ([]ide.UnsavedFile, error) {
	return []ide.UnsavedFile{{Path: "/elsewhere/x.go", Text: "no"}}, nil
}

func (e *scriptedEditor) SettledDiagnostics(_ context.Context, path string, settle time.Duration) ([]companion.FileDiagnostics, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle = settle
	return e.diags, nil
}

// serve runs a companion of ws with ed as its editor, its discovery file
// in dir; stop ends it.
func serve(t *testing.T, ws, dir string, ed companion.Editor, name string) (stop func()) {
	t.Helper()
	srv, err := companion.New(companion.Config{Workspace: []string{ws}, Editor: ed, DiscoveryDir: dir, PID: os.Getpid(),
		IDEInfo: ide.IDEInfo{Name: strings.ToLower(name), DisplayName: name}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx)
	}()
	<-srv.Ready()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func newFinder(t *testing.T, ws, dir string) *Finder {
	f := NewFinder(ws, Options{
		// The companions are on this machine, whatever /.dockerenv says: no
		// lookup of host.docker.internal leaves it.
		Discovery: client.Options{Dir: dir, Getenv: func(string) string { return "" }, InContainer: func() bool { return false }},
		// Every Find looks again: a test serves a companion and asks at
		// once, sooner than a millisecond after a search found none.
		Recheck: time.Nanosecond,
	})
	t.Cleanup(f.Close)
	return f
}

func workspace(t *testing.T) (ws, dir string) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws, filepath.Join(t.TempDir(), "gemini", "ide")
}

const goplsDefinition = `[{"uri":"file:///w/greet/greet.go","range":{"start":{"line":15,"character":5},"end":{"line":15,"character":10}}}]`

func TestSource(t *testing.T) {
	ws, dir := workspace(t)
	ed := &scriptedEditor{
		clients: []ide.LSPClient{{Name: "gopls", Indexing: "Loading packages"}},
		answers: map[string]ide.LSPRequestResult{
			"textDocument/definition":           {Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Result: json.RawMessage(goplsDefinition)}, {Client: "golangci", Result: json.RawMessage(goplsDefinition)}}},
			"textDocument/implementation":       {Clients: []string{"gopls"}},
			"textDocument/references":           {Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Error: &ide.LSPError{Code: -32803, Message: "gopls did not answer within 100 ms"}}}},
			"textDocument/hover":                {},
			"textDocument/prepareCallHierarchy": {Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Result: json.RawMessage(`[{"name":"Greet","kind":12,"uri":"file:///w/greet/greet.go","range":{"start":{"line":15,"character":0},"end":{"line":17,"character":1}},"selectionRange":{"start":{"line":15,"character":5},"end":{"line":15,"character":10}}}]`)}}},
			"callHierarchy/incomingCalls":       {Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Result: json.RawMessage(`[]`)}}},
		},
		diags: []companion.FileDiagnostics{{Path: filepath.Join(ws, "main.go"), Diagnostics: []companion.Diagnostic{{Message: "undefined: x", Severity: codeintel.SevError, Source: "compiler",
			Range: codeintel.Range{Start: codeintel.Position{Line: 3, Character: 1}, End: codeintel.Position{Line: 3, Character: 2}}}}}},
	}
	serve(t, ws, dir, ed, "Neovim")
	f := newFinder(t, ws, dir)
	cl := f.Find(context.Background())
	if cl == nil {
		t.Fatal("no editor found")
	}
	if again := f.Find(context.Background()); again != cl {
		t.Error("a second Find made new Clients")
	}
	src := New(f.Find, nil)
	ctx := context.Background()
	at := codeintel.DocPos{Path: filepath.Join(ws, "main.go"), Pos: codeintel.Position{Line: 14, Character: 19}}

	st, err := src.Status(ctx, at.Path)
	if err != nil || st.Server != "Neovim's gopls" || st.Indexing != "Loading packages" {
		t.Errorf("Status: %+v, %v", st, err)
	}
	// Two clients give the same place: it is said once.
	locs, err := src.Definition(ctx, at)
	if err != nil || len(locs) != 1 || locs[0].Path != "/w/greet/greet.go" || locs[0].Range.Start.Line != 15 {
		t.Errorf("Definition: %+v, %v", locs, err)
	}
	ed.mu.Lock()
	p := ed.asked[0]
	ed.mu.Unlock()
	if p.Path != at.Path || p.Timeout <= 0 || p.Timeout > ide.MaxLSPTimeout || !strings.Contains(string(p.Params), `"position":{"line":14,"character":19}`) {
		t.Errorf("asked %+v (%s)", p, p.Params)
	}
	if _, err := src.Implementations(ctx, at); !errors.Is(err, codeintel.ErrUnsupported) {
		t.Errorf("a client without the method: %v, want ErrUnsupported", err)
	}
	var se *codeintel.ServerError
	if _, err := src.References(ctx, at); !errors.As(err, &se) || se.Server != "Neovim's gopls" || !strings.Contains(se.Reason, "did not answer") {
		t.Errorf("a client that failed: %v", err)
	}
	if _, err := src.Hover(ctx, at); !codeintel.IsNoServer(err) || !strings.Contains(err.Error(), "Neovim has no language client for") {
		t.Errorf("no client: %v", err)
	}
	if calls, err := src.IncomingCalls(ctx, at); err != nil || len(calls) != 0 {
		t.Errorf("IncomingCalls: %+v, %v", calls, err)
	}
	ed.mu.Lock()
	last := ed.asked[len(ed.asked)-1]
	ed.mu.Unlock()
	if last.Method != "callHierarchy/incomingCalls" || last.Client != "gopls" || !strings.Contains(string(last.Params), `"item":{"name":"Greet"`) {
		t.Errorf("the calls were asked %+v (%s)", last, last.Params)
	}

	// Diagnostics: 0-based in memory (1-based on the wire), asked to
	// settle.
	fds, err := src.Diagnostics(ctx, []string{at.Path})
	if err != nil || len(fds) != 1 || fds[0].Diagnostics[0].Range.Start != (codeintel.Position{Line: 3, Character: 1}) || fds[0].Diagnostics[0].Severity != codeintel.SevError {
		t.Errorf("Diagnostics: %+v, %v", fds, err)
	}
	if ed.settle <= 0 {
		t.Error("diagnostics were not asked to settle")
	}
	if _, err := src.Diagnostics(ctx, []string{filepath.Join(ws, "notes.txt")}); !codeintel.IsNoServer(err) {
		t.Errorf("diagnostics of a file no client serves: %v", err)
	}

	// An agent's text not written is not shown to the editor; a file
	// written is.
	text := "x"
	if err := src.Changed(ctx, []codeintel.Change{{Path: at.Path, Text: &text}}); err != nil || len(ed.changed) != 0 {
		t.Errorf("Changed with a text: %v, %v", err, ed.changed)
	}
	if err := src.Changed(ctx, []codeintel.Change{{Path: at.Path}, {Path: at.Path}}); err != nil || len(ed.changed) != 1 || len(ed.changed[0]) != 1 {
		t.Errorf("Changed: %v, %v", err, ed.changed)
	}
	// Buffers outside the workspace never come back.
	if u, err := src.Unsaved(ctx); err != nil || len(u) != 0 {
		t.Errorf("Unsaved: %v, %v", u, err)
	}
}

// An editor that lends no clients is passed over, and not asked again; a
// companion that has gone is noticed, and Find looks again.
func TestFinder(t *testing.T) {
	ws, dir := workspace(t)
	stopPlain := serve(t, ws, dir, plainEditor{}, "gemkit")
	f := newFinder(t, ws, dir)
	if src := f.Find(context.Background()); src != nil {
		t.Fatalf("the terminal front-end was taken for an editor with clients: %v", src)
	}
	if len(f.refused) != 1 {
		t.Errorf("refused %v", f.refused)
	}
	stopPlain()

	ed := &scriptedEditor{clients: []ide.LSPClient{{Name: "gopls"}}}
	stop := serve(t, ws, dir, ed, "Emacs")
	cl := f.Find(context.Background())
	if cl == nil {
		t.Fatal("the editor was not found")
	}
	stop()
	// Its discovery file is gone: Find looks again, and finds none.
	if again := f.Find(context.Background()); again != nil {
		t.Errorf("a stopped companion is still found: %v", again)
	}
	// A Source kept by a caller says the editor has gone, in words.
	src := New(func(context.Context) *Clients { return cl }, nil)
	if _, err := src.Status(context.Background(), ""); !codeintel.IsNoServer(err) || !strings.Contains(err.Error(), "Emacs's companion no longer answers") {
		t.Errorf("after the companion stopped: %v", err)
	}
}

// A file written on disk (by an agent that writes itself) reaches the
// editor as lsp/changed, through the workspace's watcher.
func TestFinderWatches(t *testing.T) {
	ws, dir := workspace(t)
	ed := &scriptedEditor{clients: []ide.LSPClient{{Name: "gopls"}}}
	serve(t, ws, dir, ed, "Neovim")
	f := newFinder(t, ws, dir)
	if f.Find(context.Background()) == nil {
		t.Fatal("the editor was not found")
	}
	path := filepath.Join(ws, "extra.go")
	if err := os.WriteFile(path, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The change reaches the scripted editor through real inotify and the
	// watcher's debounce, with no event to wait on.
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		ed.mu.Lock()
		defer ed.mu.Unlock()
		return slices.ContainsFunc(ed.changed, func(p []string) bool { return slices.Contains(p, path) })
	}) {
		t.Fatalf("the editor was not told of %s", path)
	}
}
