package editors_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// tmuxPane is a detached tmux session of its own in which an editor runs:
// Vim's and Emacs's input loops want a terminal, and the test types into
// the pane as a person would.
type tmuxPane struct{ bin, sock string }

// startTmux runs argv in a 160x50 tmux pane in h's workspace with h's
// environment. When the test fails the pane's screen is logged under name;
// the tmux server ends with the test.
func startTmux(t *testing.T, h *harness, tmuxBin, name string, argv ...string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{bin: tmuxBin, sock: filepath.Join(h.tmp, "tmux.sock")}
	args := append([]string{"-S", p.sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-c", h.ws}, argv...)
	cmd := exec.Command(tmuxBin, args...)
	cmd.Dir = h.ws
	cmd.Env = append(h.env(), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := exec.Command(tmuxBin, "-S", p.sock, "capture-pane", "-p").Output(); err == nil {
				t.Logf("%s screen:\n%s", name, out)
			}
		}
		_ = exec.Command(tmuxBin, "-S", p.sock, "kill-server").Run()
	})
	return p
}

// keys types into the pane; literal text is sent as is, and names like
// Enter and Escape as keys.
func (p *tmuxPane) keys(t *testing.T, literal string, named ...string) {
	t.Helper()
	if literal != "" {
		if out, err := exec.Command(p.bin, "-S", p.sock, "send-keys", "-l", literal).CombinedOutput(); err != nil {
			t.Fatalf("tmux send-keys: %v %s", err, out)
		}
	}
	if len(named) > 0 {
		args := append([]string{"-S", p.sock, "send-keys"}, named...)
		if out, err := exec.Command(p.bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("tmux send-keys: %v %s", err, out)
		}
	}
}

// tui is the pane as a gemkittest.TUI: a CLI runs in it, or in a terminal
// of the editor in it.
func (p *tmuxPane) tui(t *testing.T) gemkittest.TUI { return paneTUI{t, p} }

type paneTUI struct {
	t *testing.T
	p *tmuxPane
}

func (u paneTUI) Screen() string {
	out, _ := exec.Command(u.p.bin, "-S", u.p.sock, "capture-pane", "-p", "-J").Output()
	return string(out)
}
func (u paneTUI) Type(text string) { u.p.keys(u.t, text) }
func (u paneTUI) Press(key string) { u.p.keys(u.t, "", key) }

// watchExit returns a channel closed once process pid has ended: the
// editor in a pane is not our child, so it is waited for on its pidfd.
func watchExit(pid int) <-chan struct{} { return gemkittest.Exited(pid) }
