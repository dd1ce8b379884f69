package lspserver

import (
	"context"
	"testing"
)

// TestDiffWithdrawnWhenServerStops: a server that stops while its client
// runs (SIGTERM, or the client's shutdown request: Neovim's :LspStop,
// eglot-shutdown, lsp-mode's workspace restart) puts back the buffer's
// text from before a waiting proposal, as Reject does, and says it was
// rejected; a CLI that closes the diff (answered in its terminal, gone,
// or `gemkit ide diff` interrupted) gets the buffer put back too. Seen in
// the tour: gemkit SIGTERMed with a Gemini CLI proposal in Neovim 0.10's
// buffer left the proposal there, unmarked and modified, as if the person
// had typed it, one :w away from the disk.
//
// Neovim sends its didChange for the proposal only after the question
// about it is answered (the prompt holds its event loop; Claude Code
// killed, or `gemkit ide diff` interrupted, with the question up left the
// proposal in the buffer): until the client reports a change, its buffer
// holds the proposal it said it applied, and that is what is put back.
func TestDiffWithdrawnWhenServerStops(t *testing.T) {
	const base = "package a\n\nfunc A() {}\n"
	for _, tc := range []struct {
		name string
		// reported: the client sent its didChange for the proposal.
		reported bool
		stop     func(d *diffSetup)
		// rejected: the CLI is told the proposal was rejected (not after
		// its own closeDiff).
		rejected bool
	}{
		{"context ends", true, func(d *diffSetup) { d.c.stop() }, true},
		{"shutdown request", true, func(d *diffSetup) { d.c.request(9, "shutdown", nil) }, true},
		{"context ends, change not reported", false, func(d *diffSetup) { d.c.stop() }, true},
		{"closeDiff, change reported", true, func(d *diffSetup) { go d.c.srv.CloseDiff(context.Background(), d.path) }, false},
		{"closeDiff, change not reported", false, func(d *diffSetup) { go d.c.srv.CloseDiff(context.Background(), d.path) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proposal := "package a\n\nfunc A() { panic(1) }\n"
			d := openDiffSetup(t, eglotCaps, true, proposal)
			c := d.c
			c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
			c.nextMethod("textDocument/publishDiagnostics")
			if err := <-d.open; err != nil {
				t.Fatal(err)
			}
			if tc.reported {
				c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 2}, "contentChanges": []map[string]any{{"text": proposal}}})
			}
			tc.stop(d)
			m := c.next()
			for m["method"] == "textDocument/publishDiagnostics" { // the mark cleared, before or after
				m = c.next()
			}
			if m["method"] != "workspace/applyEdit" {
				t.Fatalf("got %s, want the workspace/applyEdit that puts the buffer back", js(m))
			}
			if got := applyTo(proposal, editOf(t, m, d.uri)); got != base {
				t.Fatalf("the edit on stopping gives %q, want the text from before the proposal %q", got, base)
			}
			c.answer(m, map[string]any{"applied": true})
			if tc.rejected {
				c.ev.wait(t, "rejected "+d.path)
			}
		})
	}
}
