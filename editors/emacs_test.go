package editors_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestEmacs runs the real Emacs (-nw, in a tmux pane so that its command
// loop and post-command-hook run as for a person) with editors/emacs on
// its load-path. The test types keys into the pane and reads Emacs's state
// with emacsclient.
func TestEmacs(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "emacs", "emacs-nox")
	client := requireEditor(t, "emacsclient", "emacs-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	h := newHarness(t)
	d := startEmacs(t, h, bin, client, tmux, gemkittest.Gemkit(t))
	runScenario(t, h, d, editorInfo{name: "emacs", displayName: "Emacs"})
}

// emacsTestInit loads the plugin, starts a server for emacsclient and
// defines the test's queries.
const emacsTestInit = `(add-to-list 'load-path %s)
(require 'gemkit)
(require 'server)
(setq gemkit-program %s
      gemkit-args '("-v")
      server-socket-dir %s
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

(defun gemkit-test-diff (path)
  (let ((d (gethash path gemkit--diffs)))
    (if (not d)
        :null
      (let ((text (lambda (b) (with-current-buffer b (buffer-substring-no-properties (point-min) (point-max))))))
        (list (cons 'left (funcall text (gemkit--diff-left d)))
              (cons 'right (funcall text (gemkit--diff-right d)))
              (cons 'visible (if (and (get-buffer-window (gemkit--diff-left d))
                                      (get-buffer-window (gemkit--diff-right d)))
                                 t :false)))))))

(gemkit-mode 1)
`

type emacsDriver struct {
	*tmuxPane
	client, esock, tmp string
	env                []string
	pid                int
	exited             <-chan struct{}
	n                  atomic.Int64
}

func startEmacs(t *testing.T, h *harness, emacsBin, clientBin, tmuxBin, gemkit string) *emacsDriver {
	plugin, err := filepath.Abs("emacs")
	if err != nil {
		t.Fatal(err)
	}
	serverDir := filepath.Join(h.tmp, "emacs-server")
	if err := os.Mkdir(serverDir, 0o700); err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(h.home, "init.el")
	text := fmt.Sprintf(emacsTestInit, elispString(plugin), elispString(gemkit), elispString(serverDir))
	if err := os.WriteFile(init, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &emacsDriver{
		client: clientBin, tmp: h.tmp,
		esock: filepath.Join(serverDir, "gemkit-test"),
		env:   h.env(),
	}
	// Registered before the pane, so it runs after the pane is gone:
	// an Emacs still running then is leaked (its terminal closed), and
	// is killed so that it does not spin on for the rest of the run.
	t.Cleanup(func() {
		if d.exited == nil {
			return
		}
		select {
		case <-d.exited:
		case <-time.After(waitTimeout):
			killPID(d.pid)
			t.Errorf("emacs (pid %d) was still running %s after its terminal closed", d.pid, waitTimeout)
		}
	})
	d.tmuxPane = startTmux(t, h, tmuxBin, "emacs", emacsBin, "-nw", "-Q", "-l", init)
	d.waitServer(t)
	var pid int
	if err := json.Unmarshal(d.eval(t, "(emacs-pid)"), &pid); err != nil {
		t.Fatal(err)
	}
	d.pid, d.exited = pid, watchExit(pid)
	return d
}

// waitServer waits until Emacs's server for emacsclient takes
// connections: its socket file exists from the bind, before it listens.
func (d *emacsDriver) waitServer(t *testing.T) {
	t.Helper()
	waitFor(t, "emacs's server listening", func() bool {
		c, err := net.Dial("unix", d.esock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// elispString quotes s as an Emacs Lisp string.
func elispString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// eval evaluates form in Emacs and returns its value as JSON.
func (d *emacsDriver) eval(t *testing.T, form string) json.RawMessage {
	t.Helper()
	out := filepath.Join(d.tmp, fmt.Sprintf("eval-%d.json", d.n.Add(1)))
	cmd := exec.Command(d.client, "-s", d.esock, "--eval", fmt.Sprintf("(gemkit-test-json %s %s)", elispString(out), form))
	cmd.Env = d.env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("emacsclient %s: %v\n%s", form, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(out)
	return b
}

func (d *emacsDriver) evalString(t *testing.T, form string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(d.eval(t, form), &s); err != nil {
		t.Fatalf("emacs %s: %v", form, err)
	}
	return s
}

// minibuffer answers the open prompt with text, replacing what it offers
// (C-a C-k). It types a character before: C-k in an empty minibuffer is
// an error (End of buffer), and Emacs discards the keys typed ahead of an
// error, the answer among them when it reads them late on a loaded
// machine.
func (d *emacsDriver) minibuffer(t *testing.T, text string) {
	d.keys(t, "x", "C-a", "C-k")
	d.keys(t, text, "Enter")
}

// lastKeys tells whether keys (characters) are the last keys Emacs has
// read from the terminal.
func (d *emacsDriver) lastKeys(t *testing.T, keys string) bool {
	var got []rune
	_ = json.Unmarshal(d.eval(t, fmt.Sprintf("(let ((k (recent-keys))) (substring k (max 0 (- (length k) %d))))", len(keys))), &got)
	return string(got) == keys
}

func (d *emacsDriver) regionActive(t *testing.T) bool {
	var b bool
	_ = json.Unmarshal(d.eval(t, "(with-current-buffer (window-buffer (selected-window)) (if (region-active-p) t :false))"), &b)
	return b
}

func (d *emacsDriver) PID() int                { return d.pid }
func (d *emacsDriver) Exited() <-chan struct{} { return d.exited }

func (d *emacsDriver) Open(t *testing.T, path string, line, col int) {
	d.keys(t, "", "C-x", "C-f")
	d.minibuffer(t, path)
	d.keys(t, "", "M-g", "g")
	d.keys(t, fmt.Sprint(line), "Enter", "C-a")
	for i := 1; i < col; i++ {
		d.keys(t, "", "C-f")
	}
}

func (d *emacsDriver) SelectLines(t *testing.T, from, to int) {
	d.keys(t, "", "M-g", "g")
	d.keys(t, fmt.Sprint(from), "Enter", "C-a", "C-Space")
	for i := from; i < to; i++ {
		d.keys(t, "", "C-n")
	}
	d.keys(t, "", "C-e")
	waitFor(t, "the region active", func() bool { return d.regionActive(t) })
}

// Unselect types C-g until the region is inactive: a C-g that arrives
// while Emacs answers one of the driver's emacsclient requests quits that
// request ("Quit emacsclient request", seen under load) instead of the
// region.
func (d *emacsDriver) Unselect(t *testing.T) {
	deadline := time.Now().Add(waitTimeout)
	for {
		d.keys(t, "", "C-g")
		// Emacs reads the key after tmux has sent it: asking at once could
		// have this C-g quit the question.
		time.Sleep(200 * time.Millisecond)
		// Whether Emacs's region is active is asked of Emacs, which tells
		// no one when it changes.
		if gemkittest.Poll(2*time.Second, 50*time.Millisecond, func() bool { return !d.regionActive(t) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for the region inactive", waitTimeout)
		}
	}
}

// OpenTerminal runs ansi-term beside the file; its shell does not make
// quitting Emacs ask for confirmation.
func (d *emacsDriver) OpenTerminal(t *testing.T) {
	d.eval(t, `(let ((w (selected-window)))
  (select-window (split-window-right))
  (set-process-query-on-exit-flag (get-buffer-process (ansi-term "/bin/sh")) nil)
  (select-window w)
  t)`)
}

func (d *emacsDriver) inTerminal(t *testing.T) bool {
	var b bool
	_ = json.Unmarshal(d.eval(t, "(if (eq (buffer-local-value 'major-mode (window-buffer (selected-window))) 'term-mode) t :false)"), &b)
	return b
}

// ToTerminal and FromTerminal type C-x o, which ansi-term's char mode
// leaves to Emacs.
func (d *emacsDriver) ToTerminal(t *testing.T) {
	d.keys(t, "", "C-x", "o")
	waitFor(t, "the terminal's window selected", func() bool { return d.inTerminal(t) })
}

func (d *emacsDriver) FromTerminal(t *testing.T) {
	d.keys(t, "", "C-x", "o")
	waitFor(t, "the file's window selected", func() bool { return !d.inTerminal(t) })
}

func (d *emacsDriver) Diff(t *testing.T, path string) (diffView, bool) {
	var v *struct {
		Left, Right string
		Visible     bool
	}
	if err := json.Unmarshal(d.eval(t, "(gemkit-test-diff "+elispString(path)+")"), &v); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return diffView{}, false
	}
	return diffView{Left: v.Left, Right: v.Right, Visible: v.Visible}, true
}

func (d *emacsDriver) AppendRight(t *testing.T, path, line string) {
	view, ok := d.Diff(t, path)
	if !ok {
		t.Fatalf("no diff of %s to edit", path)
	}
	d.eval(t, "(progn (select-window (get-buffer-window (gemkit--diff-right (gethash "+elispString(path)+" gemkit--diffs)))) t)")
	d.keys(t, "", "M->")
	if strings.HasSuffix(view.Right, "\n") || view.Right == "" {
		d.keys(t, line, "Enter")
	} else {
		d.keys(t, "", "Enter")
		d.keys(t, line)
	}
	waitFor(t, "the edit in the proposal", func() bool {
		v, ok := d.Diff(t, path)
		return ok && strings.Contains(v.Right, line)
	})
}

func (d *emacsDriver) Accept(t *testing.T, _ string) { d.keys(t, "", "C-c", "C-c") }

func (d *emacsDriver) Reject(t *testing.T, _ string) {
	d.keys(t, "", "M-x")
	d.keys(t, "gemkit-reject", "Enter")
}

func (d *emacsDriver) CloseView(t *testing.T, _ string) { d.keys(t, "", "C-x", "k", "Enter") }

func (d *emacsDriver) BufferText(t *testing.T, path string) string {
	return d.evalString(t, "(let ((b (find-buffer-visiting "+elispString(path)+"))) (if b (with-current-buffer b (buffer-string)) \"\"))")
}

func (d *emacsDriver) SaveAs(t *testing.T, newPath string) {
	d.keys(t, "", "C-x", "C-w")
	d.minibuffer(t, newPath)
}

func (d *emacsDriver) CloseFile(t *testing.T, path string) {
	d.eval(t, "(kill-buffer (find-buffer-visiting "+elispString(path)+"))")
}

func (d *emacsDriver) Cd(t *testing.T, dir string) {
	d.keys(t, "", "M-x")
	d.keys(t, "gemkit-set-workspace", "Enter")
	d.minibuffer(t, dir)
}

func (d *emacsDriver) Getenv(t *testing.T, name string) string {
	return d.evalString(t, "(or (getenv "+elispString(name)+") \"\")")
}

func (d *emacsDriver) Quit(t *testing.T) { d.keys(t, "", "C-x", "C-c") }

// HangUp closes Emacs's terminal, as closing a terminal window does, and
// waits for Emacs to end: it is killed by SIGHUP, and gemkit with it.
func (d *emacsDriver) HangUp(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(d.tmuxPane.bin, "-S", d.tmuxPane.sock, "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-server: %v %s", err, out)
	}
	select {
	case <-d.exited:
	case <-time.After(waitTimeout):
		t.Fatalf("emacs (pid %d) was still running %s after its terminal hung up", d.pid, waitTimeout)
	}
}

func (d *emacsDriver) Find(t *testing.T, path, needle string) {
	d.keys(t, "", "C-x", "C-f")
	d.minibuffer(t, path)
	d.keys(t, "", "M-<", "C-s")
	d.keys(t, needle, "Enter", "C-r")
	d.keys(t, needle, "Enter")
}

func (d *emacsDriver) SelectText(t *testing.T, needle string) {
	d.keys(t, "", "C-Space")
	for range utf8.RuneCountInString(needle) {
		d.keys(t, "", "C-f")
	}
	waitFor(t, "the region active", func() bool { return d.regionActive(t) })
}

func (d *emacsDriver) SelectAll(t *testing.T) {
	d.keys(t, "", "C-x", "h")
	waitFor(t, "the region active", func() bool { return d.regionActive(t) })
}

func (d *emacsDriver) OpenPrompt(t *testing.T) {
	d.keys(t, "", "M-x")
	waitFor(t, "emacs's minibuffer", func() bool {
		var b bool
		_ = json.Unmarshal(d.eval(t, "(if (active-minibuffer-window) t :false)"), &b)
		return b
	})
}

func (d *emacsDriver) ClosePrompt(t *testing.T) { d.keys(t, "", "C-g") }

func (d *emacsDriver) Messages(t *testing.T) string {
	return d.evalString(t, `(with-current-buffer "*Messages*" (buffer-substring-no-properties (point-min) (point-max)))`)
}

// killPID kills the process pid, if it is still there.
func killPID(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
