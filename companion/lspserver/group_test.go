package lspserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGroup: two servers of one editor and workspace (as eglot starts one
// per major mode) make one IDE: only the first starts a companion; the
// second's documents, cursor and code actions reach it; a diff is shown
// once, through the first's client; when the first goes, the second takes
// over with the files it knows.
func TestGroup(t *testing.T) {
	ws := t.TempDir()
	sock := GroupPath(t.TempDir(), 4242, []string{ws})
	if sock == "" {
		t.Fatal("no group path")
	}
	group := func(Init) string { return sock }
	py, goFile := filepath.Join(ws, "a.py"), filepath.Join(ws, "b.go")
	for _, p := range []string{py, goFile} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lead, follower := startGroup(t, group, 4242, ws)
	select {
	case <-follower.init:
		t.Fatal("the follower started a companion of its own")
	case <-time.After(100 * time.Millisecond):
	}
	follower.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(goFile), "languageId": "go", "version": 0, "text": "x\n"}})
	lead.ev.wait(t, "focus "+goFile)

	// The diff goes through the leader's client, once.
	lead.showProposal(t, goFile, "y\n")
	follower.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uriOf(goFile), "version": 1}, "contentChanges": []map[string]any{{"text": "y\n"}}})
	// The follower's client asks for code actions on the buffer: the
	// leader's answer comes back through it.
	follower.request(2, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": uriOf(goFile)}, "range": Range{}, "context": map[string]any{}})
	m := follower.next()
	actions, _ := m["result"].([]any)
	if m["id"] != float64(2) || len(actions) != 2 {
		t.Fatalf("the follower's code actions %s", js(m))
	}
	follower.request(3, "workspace/executeCommand", actions[0].(map[string]any)["command"])
	lead.ev.wait(t, "accepted "+goFile+" \"y\\n\"")

	// The leader's client quits: the follower takes over.
	lead.in.Close()
	select {
	case <-follower.init:
	case <-time.After(waitTimeout):
		t.Fatal("the follower did not take over")
	}
	follower.ev.wait(t, "focus "+goFile)
}

// startGroup starts a leader and a follower of one group (the servers of
// editor pid for workspace ws) and initializes both; the follower joins
// the leader.
func startGroup(t *testing.T, group func(Init) string, pid int, ws string) (lead, follower *client) {
	t.Helper()
	params := map[string]any{"processId": pid, "rootUri": uriOf(ws), "capabilities": eglotCaps}
	lead = start(t, Options{Group: group})
	lead.initialize(params)
	follower = start(t, Options{Group: group})
	follower.request(1, "initialize", params)
	if m := follower.next(); m["result"] == nil {
		t.Fatalf("the follower's initialize answered %s", js(m))
	}
	return lead, follower
}

// showProposal runs the leader's OpenDiff of path with text, its client
// applying the edit.
func (c *client) showProposal(t *testing.T, path, text string) {
	t.Helper()
	open := make(chan error, 1)
	go func() { open <- c.srv.OpenDiff(context.Background(), path, text) }()
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-open; err != nil {
		t.Fatal(err)
	}
}
