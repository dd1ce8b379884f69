package lspserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/companion"
)

// applyTo applies an edit to text as a client does (positions clamped).
func applyTo(text string, e TextEdit) string {
	a, b := offset(text, e.Range.Start), offset(text, e.Range.End)
	return text[:a] + e.NewText + text[b:]
}

func TestLineEdit(t *testing.T) {
	cases := []struct {
		from, to    string
		first, last int
	}{
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"a\nb\nc\n", "a\nc\n", 1, 0},
		{"a\nb", "a\nc", 1, 1},
		{"", "x\ny\n", 0, 1},
		{"x", "x\n", 0, 0},
		{"a\n", "a\nb", 1, 1},
		{"a\nz", "b\nz", 0, 0},
		{"same\n", "same\n", 2, 1},
		{"a\nb\n", "", 0, -1},
		{"😀\nb\n", "😀\nc\nd\n", 1, 2},
		// Lines added at the end, and the end replaced.
		{"one\ntwo\nthree\n", "one\ntwo\nthree\nfour\n", 3, 3},
		{"a\n", "a\nb\nc\n", 1, 2},
		{"a\nb\n", "a\nb\nc", 2, 2},
		{"a\nb\n", "a\nb\n\n", 2, 2},
		{"é\n", "é\nx\n", 1, 1},
		{"a\nb\n", "a\n", 1, 0},
		{"a\nb\n", "a\nc\nd\n", 1, 2},
	}
	for _, tc := range cases {
		e, first, last := lineEdit(tc.from, tc.to)
		if got := applyTo(tc.from, e); got != tc.to {
			t.Errorf("lineEdit(%q, %q) = %+v, which gives %q", tc.from, tc.to, e, got)
		}
		if first != tc.first || last != tc.last {
			t.Errorf("lineEdit(%q, %q) changed lines %d..%d, want %d..%d", tc.from, tc.to, first, last, tc.first, tc.last)
		}
		// Neovim 0.10 gains an empty line from an edit that starts
		// after the final newline (apply_text_edits appends its lines).
		if n := strings.Count(tc.from, "\n"); tc.from != "" && strings.HasSuffix(tc.from, "\n") && e.Range.Start.Line >= n {
			t.Errorf("lineEdit(%q, %q) = %+v starts after the final newline", tc.from, tc.to, e)
		}
	}
	// Neovim 0.7 leaves an extra line for text inserted at 0:0 of an
	// empty buffer unless the range ends on line 1.
	if e, _, _ := lineEdit("", "x\n"); e.Range.End != (Position{Line: 1}) {
		t.Errorf("edit of an empty buffer ends at %+v, want line 1", e.Range.End)
	}
}

// diffSetup opens a.go in the client and starts an OpenDiff; it returns
// the applyEdit request the client got.
type diffSetup struct {
	c    *client
	path string
	uri  string
	open chan error
}

func openDiffSetup(t *testing.T, caps map[string]any, opened bool, content string) *diffSetup {
	return openDiffSetupBy(t, caps, opened, content, "")
}

// openDiffSetupBy is openDiffSetup for a proposal of agent
// (companion.ProposedBy).
func openDiffSetupBy(t *testing.T, caps map[string]any, opened bool, content, agent string) *diffSetup {
	ws := t.TempDir()
	path := filepath.Join(ws, "a.go")
	if err := os.WriteFile(path, []byte("package a\n\nfunc A() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{})
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": caps})
	d := &diffSetup{c: c, path: path, uri: uriOf(path), open: make(chan error, 1)}
	if opened {
		c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": d.uri, "languageId": "go", "version": 0, "text": "package a\n\nfunc A() {}\n"}})
		c.ev.wait(t, "focus "+path)
	}
	ctx := context.Background()
	if agent != "" {
		ctx = companion.WithProposer(ctx, agent)
	}
	go func() { d.open <- c.srv.OpenDiff(ctx, path, content) }()
	return d
}

// edit returns the one text edit of an applyEdit request.
func editOf(t *testing.T, m map[string]any, uri string) TextEdit {
	t.Helper()
	b, _ := json.Marshal(m["params"])
	var p struct {
		Edit struct {
			Changes map[string][]TextEdit `json:"changes"`
		} `json:"edit"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.Edit.Changes[uri]) != 1 {
		t.Fatalf("applyEdit %s: want one edit of %s", b, uri)
	}
	return p.Edit.Changes[uri][0]
}

// TestDiffAcceptedByCodeAction (eglot's capabilities: no prompt): the
// proposal is applied to the open buffer and marked; the person edits it
// and runs "Accept proposal"; the accepted text is the buffer's.
func TestDiffAcceptedByCodeAction(t *testing.T) {
	proposal := "package a\n\nfunc A() { println() }\n"
	d := openDiffSetup(t, eglotCaps, true, proposal)
	c := d.c
	m := c.nextMethod("workspace/applyEdit")
	if got := applyTo("package a\n\nfunc A() {}\n", editOf(t, m, d.uri)); got != proposal {
		t.Fatalf("applied proposal gives %q", got)
	}
	if _, ok := m["params"].(map[string]any)["label"]; ok {
		t.Error("applyEdit has a label: Neovim 0.7 echoes it into a Press ENTER prompt")
	}
	c.answer(m, map[string]any{"applied": true})
	diag := c.nextMethod("textDocument/publishDiagnostics")
	if ds := diag["params"].(map[string]any)["diagnostics"].([]any); len(ds) != 1 {
		t.Fatalf("diagnostics %s", js(diag))
	}
	if err := <-d.open; err != nil {
		t.Fatalf("OpenDiff = %v", err)
	}
	edited := "package a\n\nfunc A() { println(1) }\n"
	c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 2}, "contentChanges": []map[string]any{{"text": edited}}})
	c.request(5, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": d.uri}, "range": Range{}, "context": map[string]any{"diagnostics": []any{}}})
	actions := c.next()["result"].([]any)
	if len(actions) != 2 {
		t.Fatalf("code actions %s", js(actions))
	}
	accept := actions[0].(map[string]any)["command"]
	c.request(6, "workspace/executeCommand", accept)
	if r := c.next(); r["id"] != float64(6) || r["error"] != nil {
		t.Fatalf("executeCommand answered %s", js(r))
	}
	c.ev.wait(t, "accepted "+d.path+" "+js(edited))
	if cleared := c.nextMethod("textDocument/publishDiagnostics"); js(cleared["params"].(map[string]any)["diagnostics"]) != "[]" {
		t.Fatalf("diagnostics not cleared: %s", js(cleared))
	}
	if b, _ := os.ReadFile(d.path); string(b) != "package a\n\nfunc A() {}\n" {
		t.Fatalf("the file on disk changed: %q", b)
	}
}

// TestDiffRejectedByCodeAction: Reject carries the edit that restores the
// buffer (clients apply a code action's edit without asking), and the
// outcome follows.
func TestDiffRejectedByCodeAction(t *testing.T) {
	d := openDiffSetup(t, eglotCaps, true, "package b\n")
	c := d.c
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	c.nextMethod("textDocument/publishDiagnostics")
	if err := <-d.open; err != nil {
		t.Fatal(err)
	}
	c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 2}, "contentChanges": []map[string]any{{"text": "package b\n"}}})
	c.request(5, "textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": d.uri}, "range": Range{}, "context": map[string]any{}})
	reject := c.next()["result"].([]any)[1].(map[string]any)
	b, _ := json.Marshal(reject["edit"].(map[string]any)["changes"].(map[string]any)[d.uri].([]any)[0])
	var e TextEdit
	_ = json.Unmarshal(b, &e)
	restored := applyTo("package b\n", e)
	if restored != "package a\n\nfunc A() {}\n" {
		t.Fatalf("Reject's edit gives %q", restored)
	}
	// The client applies the edit, then runs the command.
	c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 3}, "contentChanges": []map[string]any{{"text": restored}}})
	c.request(6, "workspace/executeCommand", reject["command"])
	c.ev.wait(t, "rejected "+d.path)
	// The answer and the cleared diagnostics, in either order; no second
	// applyEdit: the code action's edit restored the buffer.
	for range 2 {
		if m := c.next(); m["id"] != float64(6) && m["method"] != "textDocument/publishDiagnostics" {
			t.Fatalf("got %s", js(m))
		}
	}
}

// TestDiffSavedAccepts: saving the buffer accepts the proposal.
func TestDiffSavedAccepts(t *testing.T) {
	d := openDiffSetup(t, eglotCaps, true, "package c\n")
	c := d.c
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-d.open; err != nil {
		t.Fatal(err)
	}
	c.notification("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": d.uri}, "text": "package c // mine\n"})
	c.ev.wait(t, "accepted "+d.path+" "+js("package c // mine\n"))
}

// TestDiffPrompt (Neovim's capabilities): the person is asked; a
// dismissed prompt (null) leaves the proposal open, Reject restores the
// buffer with an applyEdit of its own.
func TestDiffPrompt(t *testing.T) {
	d := openDiffSetup(t, nvimCaps, true, "package d\n")
	c := d.c
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-d.open; err != nil {
		t.Fatal(err)
	}
	c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 2}, "contentChanges": []map[string]any{{"text": "package d\n"}}})
	var ask map[string]any
	for ask == nil {
		if m := c.next(); m["method"] == "window/showMessageRequest" {
			ask = m
		}
	}
	c.answer(ask, map[string]any{"title": "Reject"})
	restore := c.nextMethod("workspace/applyEdit")
	if got := applyTo("package d\n", editOf(t, restore, d.uri)); got != "package a\n\nfunc A() {}\n" {
		t.Fatalf("restore gives %q", got)
	}
	c.answer(restore, map[string]any{"applied": true})
	c.ev.wait(t, "rejected "+d.path)
}

// TestDiffNewFile: a file that is not open (here: does not exist) gets
// its proposal through the client, and a dismissed prompt does not
// reject it; CloseDiff returns the proposal.
func TestDiffNewFile(t *testing.T) {
	ws := t.TempDir()
	c := start(t, Options{})
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": nvimCaps})
	path := filepath.Join(ws, "new.go")
	open := make(chan error, 1)
	go func() { open <- c.srv.OpenDiff(context.Background(), path, "package n\n") }()
	m := c.nextMethod("workspace/applyEdit")
	if e := editOf(t, m, uriOf(path)); e.Range.End != (Position{Line: 1}) || e.NewText != "package n\n" {
		t.Fatalf("edit of a new file %+v", e)
	}
	c.answer(m, map[string]any{"applied": true})
	if err := <-open; err != nil {
		t.Fatal(err)
	}
	for {
		if m := c.next(); m["method"] == "window/showMessageRequest" {
			c.answer(m, nil)
			break
		}
	}
	content, ok, err := c.srv.CloseDiff(context.Background(), path)
	if err != nil || !ok || content != "package n\n" {
		t.Fatalf("CloseDiff = %q, %v, %v", content, ok, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the new file was written")
	}
}

// TestDiffNotApplied: an editor that refuses the edit fails OpenDiff
// with its reason.
func TestDiffNotApplied(t *testing.T) {
	d := openDiffSetup(t, eglotCaps, true, "package e\n")
	d.c.answer(d.c.nextMethod("workspace/applyEdit"), map[string]any{"applied": false, "failureReason": "buffer is read-only"})
	if err := <-d.open; err == nil || !strings.Contains(err.Error(), "buffer is read-only") {
		t.Fatalf("OpenDiff = %v", err)
	}
}

// TestDiffClosedBuffer: closing the buffer rejects the proposal.
func TestDiffClosedBuffer(t *testing.T) {
	d := openDiffSetup(t, eglotCaps, true, "package f\n")
	d.c.answer(d.c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-d.open; err != nil {
		t.Fatal(err)
	}
	d.c.notification("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": d.uri}})
	d.c.ev.wait(t, "rejected "+d.path)
	d.c.ev.wait(t, "close "+d.path)
}

// TestDiffNoApplyEdit: a client without applyEdit cannot show diffs.
func TestDiffNoApplyEdit(t *testing.T) {
	d := openDiffSetup(t, map[string]any{}, false, "x")
	if err := <-d.open; err == nil || !strings.Contains(err.Error(), "cannot apply workspace edits") {
		t.Fatalf("OpenDiff = %v", err)
	}
}

// TestDiffWordingPerAgent (Neovim's capabilities): the diagnostic on the
// proposed lines and the question name the agent that proposed the
// change and say how to accept it the way that works for it: saving for
// Gemini CLI and Claude Code, the Accept action for Qwen Code, which
// reports a write as failed after the editor's save replaced the file
// (TestLSPNeovimQwenCode).
func TestDiffWordingPerAgent(t *testing.T) {
	for _, tc := range []struct {
		agent             string
		wantMark, wantAsk []string
		notMark, notAsk   []string
	}{
		{"", []string{"Proposed change to a.go: save to accept it"}, []string{"gemkit: a change to ", "a.go is proposed in its buffer", "(then save to accept)"}, []string{"Proposed by"}, []string{" by "}},
		{companion.AgentGemini, []string{"Proposed by Gemini CLI: a change to a.go. Save to accept it (with your edits)"}, []string{"a.go by Gemini CLI is proposed in its buffer", "(then save to accept)"}, nil, nil},
		{companion.AgentClaude, []string{"Proposed by Claude Code: a change to a.go. Save to accept it"}, []string{"a.go by Claude Code is proposed in its buffer", "(then save to accept)"}, nil, nil},
		{companion.AgentQwen, []string{"Proposed by Qwen Code: a change to a.go.", `with the code action "Accept proposal"`, "do not save to accept: Qwen Code would report that its write failed"},
			[]string{"a.go by Qwen Code is proposed in its buffer", `edit it first (then accept with the code action "Accept proposal", not by saving`},
			[]string{"Save to accept", "save to accept it"}, []string{"then save to accept"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			d := openDiffSetupBy(t, nvimCaps, true, "package q\n", tc.agent)
			c := d.c
			c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
			if err := <-d.open; err != nil {
				t.Fatal(err)
			}
			var mark, ask string
			for mark == "" || ask == "" {
				m := c.next()
				switch m["method"] {
				case "textDocument/publishDiagnostics":
					if ds, _ := m["params"].(map[string]any)["diagnostics"].([]any); len(ds) == 1 {
						mark, _ = ds[0].(map[string]any)["message"].(string)
					}
				case "window/showMessageRequest":
					ask, _ = m["params"].(map[string]any)["message"].(string)
				}
			}
			for _, w := range tc.wantMark {
				if !strings.Contains(mark, w) {
					t.Errorf("diagnostic %q does not say %q", mark, w)
				}
			}
			for _, w := range tc.notMark {
				if strings.Contains(mark, w) {
					t.Errorf("diagnostic %q says %q", mark, w)
				}
			}
			for _, w := range tc.wantAsk {
				if !strings.Contains(ask, w) {
					t.Errorf("question %q does not say %q", ask, w)
				}
			}
			for _, w := range tc.notAsk {
				if strings.Contains(ask, w) {
					t.Errorf("question %q says %q", ask, w)
				}
			}
		})
	}
}
