package lspserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestClientFixtures feeds the capabilities real clients advertise (the
// parts gemkit reads, from each client's own source) to the server and
// checks that the diff interaction it picks is one the client supports:
// the proposal applied with workspace/applyEdit (all of them advertise
// it), brought into view with window/showDocument only where advertised,
// asked about with window/showMessageRequest only where advertised.
func TestClientFixtures(t *testing.T) {
	cases := []struct {
		name       string
		clientInfo map[string]any
		caps       map[string]any
		show, ask  bool
	}{
		{
			// helix-editor/helix helix-lsp/src/client.rs, Client::initialize:
			// apply_edit, window with work_done_progress only.
			name: "helix", clientInfo: map[string]any{"name": "helix"},
			caps: map[string]any{
				"workspace": map[string]any{"applyEdit": true, "workspaceFolders": true, "executeCommand": map[string]any{"dynamicRegistration": false}},
				"window":    map[string]any{"workDoneProgress": true},
			},
		},
		{
			// zed-industries/zed crates/lsp/src/lsp.rs,
			// default_initialize_params: apply_edit, show_message with no
			// message_action_item, no show_document; clientInfo is the
			// release channel's display name.
			name: "zed", clientInfo: map[string]any{"name": "Zed"},
			caps: map[string]any{
				"workspace": map[string]any{"applyEdit": true, "workspaceFolders": true, "executeCommand": map[string]any{"dynamicRegistration": false}},
				"window":    map[string]any{"workDoneProgress": true, "showMessage": map[string]any{}},
			},
			ask: true,
		},
		{
			// sublimelsp/LSP plugin/core/sessions.py, get_initialize_params.
			name: "sublime", clientInfo: map[string]any{"name": "Sublime Text LSP"},
			caps: map[string]any{
				"workspace": map[string]any{"applyEdit": true, "executeCommand": map[string]any{}, "workspaceFolders": true},
				"window": map[string]any{
					"showDocument":     map[string]any{"support": true},
					"showMessage":      map[string]any{"messageActionItem": map[string]any{"additionalPropertiesSupport": true}},
					"workDoneProgress": true,
				},
			},
			show: true, ask: true,
		},
		{
			// redhat-developer/lsp4ij src/main/java/com/redhat/devtools/
			// lsp4ij/internal/ClientCapabilitiesFactory.java:
			// setApplyEdit(TRUE), ShowDocumentCapabilities(true), an empty
			// WindowShowMessageRequestCapabilities.
			name: "lsp4ij", clientInfo: map[string]any{"name": "IntelliJ IDEA"},
			caps: map[string]any{
				"workspace": map[string]any{"applyEdit": true, "executeCommand": map[string]any{"dynamicRegistration": true}, "workspaceFolders": true},
				"window":    map[string]any{"showDocument": map[string]any{"support": true}, "workDoneProgress": true, "showMessage": map[string]any{}},
			},
			show: true, ask: true,
		},
		{name: "neovim 0.7", clientInfo: map[string]any{"name": "Neovim"}, caps: nvimCaps, ask: true},
		{name: "neovim 0.10", clientInfo: map[string]any{"name": "Neovim"}, caps: nvim010Caps, show: true, ask: true},
		{name: "eglot 1.9", caps: eglotCaps},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			path := filepath.Join(ws, "a.txt")
			if err := os.WriteFile(path, []byte("one\nand more\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := start(t, Options{})
			params := map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": tc.caps}
			if tc.clientInfo != nil {
				params["clientInfo"] = tc.clientInfo
			}
			c.initialize(params)
			open := make(chan error, 1)
			// The proposal is shorter than the file: the line shown must
			// be one of the proposal's (Neovim 0.10 fails on a cursor
			// outside the buffer).
			go func() { open <- c.srv.OpenDiff(context.Background(), path, "two\n") }()
			c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
			if err := <-open; err != nil {
				t.Fatal(err)
			}
			c.nextMethod("textDocument/publishDiagnostics")
			shown, asked := c.showAndAsk(t, btoi(tc.show)+btoi(tc.ask))
			if shown != tc.show || asked != tc.ask {
				t.Fatalf("showDocument %v, showMessageRequest %v; want %v, %v", shown, asked, tc.show, tc.ask)
			}
			// Nothing else: no request the client did not advertise. The
			// proposal still waiting is withdrawn from its buffer first,
			// and its mark cleared.
			c.request(99, "shutdown", nil)
			withdrawn := c.nextMethod("workspace/applyEdit")
			c.answer(withdrawn, map[string]any{"applied": true})
			if cleared := c.nextMethod("textDocument/publishDiagnostics"); js(cleared["params"].(map[string]any)["diagnostics"]) != "[]" {
				t.Fatalf("diagnostics not cleared: %s", js(cleared))
			}
			if m := c.next(); m["id"] != float64(99) {
				t.Fatalf("unexpected %s before shutdown's answer", js(m))
			}
		})
	}
}

// showAndAsk reads the n requests a proposal brings beyond its edit and
// its mark, answers a showDocument, and reports which of showDocument
// and showMessageRequest came; anything else fails the test.
func (c *client) showAndAsk(t *testing.T, n int) (shown, asked bool) {
	t.Helper()
	for range n {
		m := c.next()
		switch m["method"] {
		case "window/showDocument":
			shown = true
			// The person keeps the focus (a terminal window in
			// Neovim cannot give it up to showDocument), and the
			// selection is on the proposal's one line.
			p := m["params"].(map[string]any)
			if p["takeFocus"] != false || js(p["selection"]) != `{"end":{"character":0,"line":0},"start":{"character":0,"line":0}}` {
				t.Fatalf("showDocument %s; want takeFocus false, line 0", js(p))
			}
			c.answer(m, map[string]any{"success": true})
		case "window/showMessageRequest":
			asked = true
		default:
			t.Fatalf("unexpected %s", js(m))
		}
	}
	return shown, asked
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
