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

// lspModeConfig is the configuration docs/lsp.md gives under "### Emacs
// (lsp-mode)", with gemkit's executable named by its path.
func lspModeConfig(t *testing.T, gemkit string) string {
	return docsLSPBlock(t, "Emacs (lsp-mode)", "elisp", `'("gemkit" `, `'(`+elispString(gemkit)+` `)
}

// lspModeTestInit runs emacsclient's server and the test's JSON helper,
// activates Debian's ELPA packages (-Q skips the site start-up that
// does), logs lsp-mode's traffic for a failure's report, then reads the
// documented configuration. No gemkit plugin is loaded.
const lspModeTestInit = `(require 'server)
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
(setq package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
(package-initialize)
(setq lsp-log-io t)

;; docs/lsp.md, ### Emacs (lsp-mode):
%s`

// TestLSPEmacsLSPMode attaches the real Emacs 28's lsp-mode 8.0.0
// (Debian's elpa-lsp-mode), configured exactly as docs/lsp.md says, to
// `gemkit ide serve --editor lsp`, typed into as a person would in a tmux
// pane, with the real Gemini CLI client code (IdeClient) on the other
// end: lsp-mode's question about the project root answered with i; the
// open and active file and the cursor (lsp-mode's documentHighlight when
// the cursor rests); a selection (the region, then M-x
// lsp-execute-code-action); a diff of the open file applied to its buffer
// without a question, edited and accepted by saving; one rejected through
// the code action (buffer restored, file untouched); Emacs quits with
// C-x C-c, and gemkit and its discovery file go.
func TestLSPEmacsLSPMode(t *testing.T) {
	t.Parallel()
	if m, _ := filepath.Glob("/usr/share/emacs/site-lisp/elpa/lsp-mode-*/lsp-mode.el*"); len(m) == 0 {
		t.Fatal("lsp-mode is not installed: run scripts/setup-and-test, or apt-get install -y elpa-lsp-mode")
	}
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	h.write(t, "a.py", filePy)
	d := startEmacsLSP(t, h, func(serverDir string) string {
		return fmt.Sprintf(lspModeTestInit, elispString(serverDir), lspModeConfig(t, gemkittest.Gemkit(t)))
	})
	t.Cleanup(func() {
		select {
		case <-d.exited:
			return // Emacs has quit: nothing more to ask it
		default:
		}
		if t.Failed() {
			// What lsp-mode and gemkit said to each other.
			t.Logf("lsp-mode log:\n%s", d.evalString(t, `(mapconcat (lambda (b) (with-current-buffer b (concat (buffer-name b) ":\n" (buffer-substring-no-properties (max (point-min) (- (point-max) 20000)) (point-max))))) (seq-filter (lambda (b) (string-prefix-p "*lsp-log" (buffer-name b))) (buffer-list)) "\n")`))
			t.Logf("messages:\n%s", d.Messages(t))
		}
	})

	a := h.path("a.py")
	d.keys(t, "", "C-x", "C-f")
	d.minibuffer(t, a)
	// lsp-mode asks once where a.py's project is: import the root it
	// suggests (the workspace, a.py's directory).
	d.waitScreen(t, "is not part of any project")
	d.keys(t, "i")
	discPath, _ := discoveryFile(t, h, d.PID())
	var gemkitPID int
	if err := json.Unmarshal(d.eval(t, "(with-current-buffer (find-buffer-visiting "+elispString(h.path("a.py"))+") (process-id (lsp--workspace-cmd-proc (car (lsp-workspaces)))))"), &gemkitPID); err != nil || gemkitPID == 0 {
		t.Fatalf("gemkit's pid from lsp-mode: %d %v", gemkitPID, err)
	}
	gemkitExited := watchExit(gemkitPID)
	d.keys(t, "", "M-g", "g")
	d.keys(t, "3", "Enter", "C-a", "C-f")
	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	if conn.Status != "connected" || conn.IDE != "Emacs" || !conn.Diffing {
		t.Fatalf("IdeClient.connect: %+v; want connected to Emacs with diffing", conn)
	}
	// lsp-mode asks for highlights once the cursor rests on a symbol.
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 2})
	// The cursor rests somewhere new: on "print".
	d.keys(t, "", "C-n", "C-a")
	for range 6 {
		d.keys(t, "", "C-f")
	}
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 4, "character": 7})

	d.keys(t, "", "C-p", "C-a")
	emacsSelectDefMain(t, d, rc, a, "lsp-execute-code-action")

	// lsp-mode applies a server's edit without a question.
	accepted := emacsAcceptThenReject(t, d, rc, a, "lsp-execute-code-action", false)

	// A new file: lsp-mode makes a buffer for it, not shown.
	n := h.path("new.py")
	rc.send(t, map[string]any{"op": "openDiff", "path": n, "content": "def new():\n    pass\n"})
	waitFor(t, "the proposal in new.py's buffer", func() bool { return d.BufferText(t, n) == "def new():\n    pass\n" })
	if _, err := os.Stat(n); err == nil {
		t.Fatal("new.py exists before any answer")
	}
	d.keys(t, "", "C-x", "b")
	d.waitMinibuffer(t)
	d.minibuffer(t, "new.py")
	waitFor(t, "new.py's buffer current through C-x b", func() bool {
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
	d.waitScreen(t, "Save file")
	d.keys(t, "!")
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("emacs did not exit")
	}
	if fileOf(t, a) != accepted {
		t.Fatal("a.py changed on disk at exit")
	}
	// lsp-mode's kill-emacs-hook sends shutdown and exit.
	select {
	case <-gemkitExited:
	case <-time.After(waitTimeout):
		t.Fatalf("gemkit (pid %d) still runs after Emacs quit", gemkitPID)
	}
	waitFor(t, "the discovery file removed", func() bool { _, err := os.Stat(discPath); return os.IsNotExist(err) })
}

// waitScreen waits until Emacs's terminal shows text.
func (d *emacsDriver) waitScreen(t *testing.T, text string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%q on emacs's screen", text), func() bool {
		out, _ := exec.Command(d.tmuxPane.bin, "-S", d.tmuxPane.sock, "capture-pane", "-p").Output()
		return strings.Contains(string(out), text)
	})
}
