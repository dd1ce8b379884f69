package editors_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestEmacsProposalBesideTerm shows a proposal, from the real Gemini CLI
// client code, in the real Emacs (-nw, its menu bar on, as in emacs -Q)
// while an M-x term buffer exists, and the proposal's file has no major
// mode of its own (a .go file in emacs -Q: fundamental-mode, which has no
// local keymap). Emacs 28's term.el updates its "Terminal" menu from
// menu-bar-update-hook in the selected buffer's local keymap and fails
// with (wrong-type-argument keymapp nil) where there is none; the
// proposal buffers have one of their own, so *Messages* stays clean.
func TestEmacsProposalBesideTerm(t *testing.T) {
	t.Parallel()
	emacs := requireEditor(t, "emacs", "emacs-nox")
	client := requireEditor(t, "emacsclient", "emacs-nox")
	tmuxBin := requireEditor(t, "tmux", "tmux")
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	d := startEmacs(t, h, emacs, client, tmuxBin, gemkittest.Gemkit(t))
	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	if conn.Status != "connected" || !conn.Diffing {
		t.Fatalf("IdeClient.connect: %+v; want connected with diffing", conn)
	}

	// M-x term, as a person starts an agent's terminal.
	d.eval(t, `(progn (set-process-query-on-exit-flag (get-buffer-process (term "/bin/sh")) nil) t)`)
	a := h.path("a.go")
	rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": strings.Replace(fileA, "hi", "hello", 1)})
	waitFor(t, "the diff shown in the editor", func() bool { v, ok := d.Diff(t, a); return ok && v.Visible })
	var mode string
	_ = json.Unmarshal(d.eval(t, `(symbol-name (buffer-local-value (quote major-mode) (window-buffer (selected-window))))`), &mode)
	if mode != "fundamental-mode" {
		t.Logf("the proposal's major mode is %s, not fundamental-mode: this Emacs knows .go files", mode)
	}
	// The menu bar is updated as the screen is redrawn with the
	// proposal selected.
	d.eval(t, `(progn (force-mode-line-update t) (redisplay t) t)`)
	waitFor(t, "a redisplay with the proposal selected", func() bool {
		return d.evalString(t, `(if (string-suffix-p "[proposed]*" (buffer-name (window-buffer (selected-window)))) (progn (redisplay t) "yes") "no")`) == "yes"
	})
	if msgs := d.evalString(t, `(with-current-buffer "*Messages*" (buffer-substring-no-properties (point-min) (point-max)))`); strings.Contains(msgs, "menu-bar-update-hook") {
		t.Errorf("*Messages* has an error of menu-bar-update-hook with the proposal selected:\n%s", msgs)
	}

	d.Reject(t, a)
	var res struct{ Status string }
	rc.read(t, &res)
	if res.Status != "rejected" {
		t.Fatalf("IdeClient.openDiff = %+v; want rejected", res)
	}
	rc.send(t, map[string]any{"op": "quit"})
	// The terminal's char mode would send C-x C-c to its shell.
	d.eval(t, `(progn (kill-buffer "*terminal*") t)`)
	d.Quit(t)
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("emacs did not exit")
	}
}
