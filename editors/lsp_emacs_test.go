package editors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// eglotLSPInit is the eglot configuration docs/lsp.md gives (here for
// python-mode), with a server for emacsclient and the test's JSON helper.
// No gemkit plugin is loaded.
const eglotLSPInit = `(require 'server)
(setq server-socket-dir %s
      server-name "gemkit-test"
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil)
(electric-indent-mode -1)
(server-start)
(defun gemkit-test-json (file value)
  (let ((coding-system-for-write 'utf-8-unix))
    (with-temp-file file (insert (json-serialize value))))
  t)

;; -Q skips Debian's site start-up, which activates elpa-eglot.
(setq package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
(package-initialize)
(require 'eglot)
(add-to-list 'eglot-server-programs
             '(python-mode . (%s "ide" "serve" "--editor" "lsp"
                              "--ide-name" "emacs" "--ide-display-name" "Emacs")))
(add-hook 'python-mode-hook #'eglot-ensure)
`

const filePy = "import sys\n\ndef main():\n    print(\"hi\")\n"

// TestLSPEglot attaches the real Emacs 28's eglot 1.9 (Debian's
// elpa-eglot) to `gemkit ide serve --editor lsp`, typed into as a person
// would in a tmux pane, with the real Gemini CLI client code (IdeClient)
// on the other end: the open and active file and cursor (reported by
// eglot when the cursor rests), a selection (the region, then M-x
// eglot-code-actions), a diff of an open file edited and accepted by
// saving, one rejected through the code action menu (buffer restored),
// and a diff of a new file accepted; Emacs quits with C-x C-c, which
// hangs up the server, and the discovery file goes with it.
func TestLSPEglot(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	h.write(t, "a.py", filePy)
	d := startEmacsLSP(t, h, func(serverDir string) string {
		return fmt.Sprintf(eglotLSPInit, elispString(serverDir), elispString(gemkittest.Gemkit(t)))
	})
	t.Cleanup(func() {
		if t.Failed() {
			// What eglot and gemkit said to each other.
			t.Logf("eglot events:\n%s", d.evalString(t, `(let ((b (seq-find (lambda (b) (string-prefix-p "*EGLOT" (buffer-name b))) (buffer-list)))) (if b (with-current-buffer b (buffer-substring-no-properties (max (point-min) (- (point-max) 20000)) (point-max))) ""))`))
		}
	})

	a := h.path("a.py")
	d.Open(t, a, 3, 2)
	discPath, _ := discoveryFile(t, h, d.PID())
	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	if conn.Status != "connected" || conn.IDE != "Emacs" || !conn.Diffing {
		t.Fatalf("IdeClient.connect: %+v; want connected to Emacs with diffing", conn)
	}
	// eglot asks for hover and highlights at point once the cursor rests.
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 2})

	d.keys(t, "", "C-a")
	emacsSelectDefMain(t, d, rc, a, "eglot-code-actions")

	// eglot asks before a server's edit.
	accepted := emacsAcceptThenReject(t, d, rc, a, "eglot-code-actions", true)

	// A new file: eglot asks, then opens a buffer for it.
	n := h.path("new.py")
	rc.send(t, map[string]any{"op": "openDiff", "path": n, "content": "def new():\n    pass\n"})
	d.answerYes(t)
	waitFor(t, "the proposal in new.py's buffer", func() bool { return d.BufferText(t, n) == "def new():\n    pass\n" })
	if _, err := os.Stat(n); err == nil {
		t.Fatal("new.py exists before any answer")
	}
	d.keys(t, "", "C-x", "C-f")
	d.waitMinibuffer(t)
	d.minibuffer(t, n)
	waitFor(t, "new.py's buffer current", func() bool {
		return d.evalString(t, "(or (buffer-file-name (window-buffer (selected-window))) \"\")") == n
	})
	d.keys(t, "", "M->")
	d.keys(t, "# mine", "Enter")
	d.keys(t, "", "C-x", "C-s")
	rc.wantOutcome(t, "accepted", "def new():\n    pass\n# mine\n")

	rc.send(t, map[string]any{"op": "quit"})
	d.Quit(t)
	// a.py's buffer holds the file's text, restored by the Reject: Emacs
	// counts it as modified and offers to save it (the same bytes).
	waitFor(t, "Emacs's offer to save a.py", func() bool {
		out, _ := exec.Command(d.tmuxPane.bin, "-S", d.tmuxPane.sock, "capture-pane", "-p").Output()
		return strings.Contains(string(out), "Save file")
	})
	d.keys(t, "!")
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("emacs did not exit")
	}
	if fileOf(t, a) != accepted {
		t.Fatal("a.py changed on disk at exit")
	}
	// kill-emacs sends no shutdown: it hangs the server up.
	waitFor(t, "the discovery file removed", func() bool { _, err := os.Stat(discPath); return os.IsNotExist(err) })
}

// waitMinibuffer waits until Emacs prompts.
func (d *emacsDriver) waitMinibuffer(t *testing.T) {
	t.Helper()
	waitFor(t, "emacs's minibuffer", func() bool {
		var b bool
		_ = json.Unmarshal(d.eval(t, "(if (active-minibuffer-window) t :false)"), &b)
		return b
	})
}

// answerYes answers eglot's "Server wants to edit … Proceed? (y or n)".
func (d *emacsDriver) answerYes(t *testing.T) {
	t.Helper()
	waitFor(t, "eglot's question", func() bool {
		var b bool
		_ = json.Unmarshal(d.eval(t, "(if (and (active-minibuffer-window) (string-match-p \"Server wants to edit\" (or (minibuffer-prompt) \"\"))) t :false)"), &b)
		return b
	})
	d.keys(t, "y")
}

// emacsAcceptThenReject runs, in Emacs with an LSP client attached to a
// (a.py, holding filePy), a diff of a edited in the buffer and accepted by
// saving, after which the CLI's write of the same text raises no conflict,
// then one rejected through the client's code action command: the buffer
// goes back to what was accepted and the file stays. confirms says the
// client asks before a server's edit (eglot), answered yes. It returns
// the accepted text.
func emacsAcceptThenReject(t *testing.T, d *emacsDriver, rc *realClient, a, codeActions string, confirms bool) string {
	t.Helper()
	openDiff := func(content string) {
		rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": content})
		if confirms {
			d.answerYes(t)
		}
	}
	proposal := strings.Replace(filePy, "hi", "hello", 1)
	openDiff(proposal)
	waitFor(t, "the proposal in a.py's buffer", func() bool { return d.BufferText(t, a) == proposal })
	if fileOf(t, a) != filePy {
		t.Fatal("a.py changed on disk before any answer")
	}
	d.keys(t, "", "M->")
	d.keys(t, "# edited by hand", "Enter")
	d.keys(t, "", "C-x", "C-s")
	accepted := proposal + "# edited by hand\n"
	rc.wantOutcome(t, "accepted", accepted)
	// The CLI writes what was accepted; Emacs sees no conflict when the
	// person edits on.
	if err := os.WriteFile(a, []byte(accepted), 0o644); err != nil {
		t.Fatal(err)
	}
	d.keys(t, "x")
	waitFor(t, "the edit after the CLI's write", func() bool { return d.BufferText(t, a) == accepted+"x" })
	if m := d.Messages(t); strings.Contains(m, "changed on disk") {
		t.Fatalf("Emacs reports a conflict: %s", m)
	}
	d.keys(t, "", "BSpace")
	d.keys(t, "", "C-x", "C-s")

	// Rejected through the code action menu: the buffer is as before.
	openDiff("print(1)\n")
	waitFor(t, "the second proposal in a.py's buffer", func() bool { return d.BufferText(t, a) == "print(1)\n" })
	d.keys(t, "", "M-x")
	d.keys(t, codeActions, "Enter")
	d.waitMinibuffer(t)
	// SPC completes a word in this prompt: type a prefix and complete.
	d.keys(t, "Rej", "Tab")
	d.keys(t, "", "Enter")
	rc.wantOutcome(t, "rejected", "")
	waitFor(t, "a.py's buffer restored", func() bool { return d.BufferText(t, a) == accepted })
	if fileOf(t, a) != accepted {
		t.Fatal("a.py changed on disk after a reject")
	}
	return accepted
}

// startEmacsLSP runs the real Emacs in a tmux pane with the init file
// init returns for the folder of its emacsclient server, and returns its
// driver once that server answers; a test that ends with Emacs still
// running kills it and fails.
func startEmacsLSP(t *testing.T, h *harness, init func(serverDir string) string) *emacsDriver {
	t.Helper()
	bin := requireEditor(t, "emacs", "emacs-nox")
	clientBin := requireEditor(t, "emacsclient", "emacs-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	serverDir := filepath.Join(h.tmp, "emacs-server")
	if err := os.Mkdir(serverDir, 0o700); err != nil {
		t.Fatal(err)
	}
	initPath := filepath.Join(h.home, "init.el")
	if err := os.WriteFile(initPath, []byte(init(serverDir)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &emacsDriver{client: clientBin, tmp: h.tmp, esock: filepath.Join(serverDir, "gemkit-test"), env: h.env()}
	t.Cleanup(func() {
		if d.exited != nil {
			select {
			case <-d.exited:
			case <-time.After(waitTimeout):
				killPID(d.pid)
				t.Errorf("emacs (pid %d) was still running after its terminal closed", d.pid)
			}
		}
	})
	d.tmuxPane = startTmux(t, h, tmux, "emacs", bin, "-nw", "-Q", "-l", initPath)
	d.waitServer(t)
	if err := json.Unmarshal(d.eval(t, "(emacs-pid)"), &d.pid); err != nil {
		t.Fatal(err)
	}
	d.exited = watchExit(d.pid)
	return d
}

// emacsSelectDefMain makes "def main", from the start of line 3 of a.py
// where the cursor is, the region, runs the client's code action command
// on it, and checks that the real client gets it as the selection, then
// quits the menu.
func emacsSelectDefMain(t *testing.T, d *emacsDriver, rc *realClient, a, codeActions string) {
	t.Helper()
	d.keys(t, "", "C-Space")
	for range 8 {
		d.keys(t, "", "C-f")
	}
	waitFor(t, "the region active", func() bool { return d.regionActive(t) })
	d.keys(t, "", "M-x")
	d.keys(t, codeActions, "Enter")
	if f := rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 9}); f.SelectedText != "def main" {
		t.Fatalf("the real client saw %q selected, want \"def main\"", f.SelectedText)
	}
	d.keys(t, "", "C-g")
}
