package lspserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lateSetup opens a.go in an eglot-like client (applyEdit asks the
// person first, eglot.el eglot--apply-workspace-edit with
// eglot-confirm-server-initiated-edits) and starts an OpenDiff with ctx;
// it returns the applyEdit request nobody has answered yet.
func lateSetup(t *testing.T, ctx context.Context, o Options) (*diffSetup, map[string]any) {
	t.Helper()
	ws := t.TempDir()
	path := filepath.Join(ws, "a.go")
	if err := os.WriteFile(path, []byte("package a\n\nfunc A() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, o)
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	d := &diffSetup{c: c, path: path, uri: uriOf(path), open: make(chan error, 1)}
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": d.uri, "languageId": "go", "version": 0, "text": "package a\n\nfunc A() {}\n"}})
	c.ev.wait(t, "focus "+path)
	go func() { d.open <- c.srv.OpenDiff(ctx, path, "package a\n\nfunc A() { x() }\n") }()
	return d, c.nextMethod("workspace/applyEdit")
}

// lateApplyUndone: the person says yes to an applyEdit OpenDiff gave up
// on; the proposal must not stay in the buffer unmarked, with nobody
// waiting for it (saving it would write the agent's text): gemkit puts
// the buffer's text back.
func lateApplyUndone(t *testing.T, d *diffSetup, apply map[string]any) {
	t.Helper()
	c := d.c
	c.answer(apply, map[string]any{"applied": true})
	undo := c.nextMethod("workspace/applyEdit")
	if got := applyTo("package a\n\nfunc A() { x() }\n", editOf(t, undo, d.uri)); got != "package a\n\nfunc A() {}\n" {
		t.Fatalf("the late proposal is undone into %q", got)
	}
	c.answer(undo, map[string]any{"applied": true})
	c.request(9, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": d.uri}, "range": Range{}, "context": map[string]any{}})
	if m := c.next(); js(m["result"]) != "[]" {
		t.Fatalf("a proposal nobody waits for is offered: %s", js(m))
	}
}

// TestDiffLateApplyAfterTimeout: eglot's "Proceed? (y or n)" answered
// after OpenDiff's timeout.
func TestDiffLateApplyAfterTimeout(t *testing.T) {
	d, apply := lateSetup(t, context.Background(), Options{RequestTimeout: 50 * time.Millisecond})
	if err := <-d.open; err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("OpenDiff = %v, want a timeout", err)
	}
	lateApplyUndone(t, d, apply)
}

// TestDiffLateApplyAfterCLIGone: the CLI went away while eglot asked
// (OpenDiff's context ended).
func TestDiffLateApplyAfterCLIGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d, apply := lateSetup(t, ctx, Options{})
	cancel()
	if err := <-d.open; err == nil {
		t.Fatal("OpenDiff succeeded after its context ended")
	}
	lateApplyUndone(t, d, apply)
}

// TestDiffClosedWhileAsking: the person answered in the CLI (closeDiff)
// while the editor still asked whether to show the proposal: OpenDiff
// ends at once, and a late yes is undone.
func TestDiffClosedWhileAsking(t *testing.T) {
	d, apply := lateSetup(t, context.Background(), Options{})
	if _, ok, err := d.c.srv.CloseDiff(context.Background(), d.path); ok || err != nil {
		t.Fatalf("CloseDiff = %v, %v for a diff not shown yet", ok, err)
	}
	select {
	case err := <-d.open:
		if err == nil {
			t.Fatal("OpenDiff succeeded after CloseDiff")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OpenDiff still waits for the editor after CloseDiff")
	}
	lateApplyUndone(t, d, apply)
}
