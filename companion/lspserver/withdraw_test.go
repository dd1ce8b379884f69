package lspserver

import (
	"testing"
)

// TestDiffWithdrawnWhenServerStops: a server that stops while its client
// runs (SIGTERM, or the client's shutdown request: Neovim's :LspStop,
// eglot-shutdown, lsp-mode's workspace restart) puts back the buffer's
// text from before a waiting proposal, as Reject does, and says it was
// rejected. Seen in the tour: gemkit SIGTERMed with a Gemini CLI
// proposal in Neovim 0.10's buffer left the proposal there, unmarked and
// modified, as if the person had typed it, one :w away from the disk.
func TestDiffWithdrawnWhenServerStops(t *testing.T) {
	const base = "package a\n\nfunc A() {}\n"
	for _, tc := range []struct {
		name string
		stop func(c *client)
	}{
		{"context ends", func(c *client) { c.stop() }},
		{"shutdown request", func(c *client) { c.request(9, "shutdown", nil) }},
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
			c.notification("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": d.uri, "version": 2}, "contentChanges": []map[string]any{{"text": proposal}}})
			tc.stop(c)
			m := c.nextMethod("workspace/applyEdit")
			if got := applyTo(proposal, editOf(t, m, d.uri)); got != base {
				t.Fatalf("the edit on stopping gives %q, want the text from before the proposal %q", got, base)
			}
			c.answer(m, map[string]any{"applied": true})
			c.ev.wait(t, "rejected "+d.path)
		})
	}
}
