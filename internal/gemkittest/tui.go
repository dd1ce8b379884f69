package gemkittest

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// TUI is a program's terminal interface as a test drives it, like a person
// at its keyboard: a tmux pane (Pane), or a terminal inside an editor.
type TUI interface {
	// Screen is the text the terminal shows now.
	Screen() string
	// Type types text, as keys that come together.
	Type(text string)
	// Press presses one key on its own, named as tmux names keys (Enter,
	// Up, Down, Escape, C-u).
	Press(key string)
}

// ScreenTimeout bounds a wait for a TUI's screen: two minutes, the time a
// CLI written in Node takes to start on a loaded machine.
const ScreenTimeout = 2 * time.Minute

// retryEvery is how long Submit and PressUntil wait for a key's effect
// before pressing the key again; pressTimeout bounds their whole wait (a
// first prompt can wait for a CLI to finish starting, long on a loaded
// machine).
const (
	retryEvery   = 5 * time.Second
	pressTimeout = 4 * time.Minute
)

// WaitScreen waits, up to ScreenTimeout, until the text screen returns
// (a TUI's Screen) meets cond, and returns that text; what names the wait
// in the failure.
func WaitScreen(t testing.TB, screen func() string, what string, cond func(screen string) bool) string {
	t.Helper()
	var s string
	if !Poll(ScreenTimeout, 100*time.Millisecond, func() bool { s = screen(); return cond(s) }) {
		t.Fatalf("timed out after %v waiting for %s; screen:\n%s", ScreenTimeout, what, s)
	}
	return s
}

// Submit enters text in ui's input as a person does: it types the text,
// waits until the screen shows it, then presses Enter on its own (keys
// that come together read as a paste, whose Enter is a new line), and
// again every few seconds until done holds: on a loaded machine an Enter
// that arrives while the program redraws can be lost, and one that finds
// the input empty does nothing. done is the submission's effect (a model
// request, a line on the screen). A terminal redrawing under load can
// leave box-drawing characters between the words on screen: they do not
// count. Text still unseen after a few seconds may be typed all the same
// (a screen late under load), so Enter is pressed; but the text, sent or
// not, stays on the screen (in the input, then in the history the CLIs
// echo it to), so text the screen has not shown for three rounds was
// dropped by the program (a CI run's Gemini CLI showed an empty input
// for four minutes of Enter) and is typed again.
func Submit(t testing.TB, ui TUI, text string, done func() bool) {
	t.Helper()
	want := screenText(text)
	shown := func() bool { return strings.Contains(screenText(ui.Screen()), want) }
	ui.Type(text)
	Poll(retryEvery, 100*time.Millisecond, shown)
	deadline := time.Now().Add(pressTimeout)
	for unseen := 0; !done(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v pressing Enter for the effect of %q; screen:\n%s", pressTimeout, text, ui.Screen())
		}
		if shown() {
			unseen = 0
		} else if unseen++; unseen == 3 {
			t.Logf("%q has not been on the screen for %d rounds of Enter: typing it again", text, unseen)
			ui.Type(text)
			Poll(retryEvery, 100*time.Millisecond, shown)
			unseen = 0
		}
		ui.Press("Enter")
		Poll(retryEvery, 100*time.Millisecond, done)
	}
}

// screenText is s without blanks and box-drawing characters, for
// comparing text with a screen.
func screenText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r >= 0x2500 && r <= 0x257f {
			return -1
		}
		return r
	}, s)
}

// PressUntil presses key, then again every few seconds until done holds
// (a menu's choice taken, a dialog gone): a program can draw a question
// before it takes keys, and lose a key while it redraws. It gives up
// after four minutes; what names the effect in the failure.
func PressUntil(t testing.TB, ui TUI, key, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(pressTimeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v pressing %s for %s; screen:\n%s", pressTimeout, key, what, ui.Screen())
		}
		ui.Press(key)
		Poll(retryEvery, 100*time.Millisecond, done)
	}
}

// Tmux is a tmux server of a test's own, on a socket in a folder of the
// test's, read with no configuration file. It ends with the test: the
// clean-up logs the screens of its windows if the test failed, closes
// the server (its programs get SIGHUP, as when a terminal closes) and
// waits for those programs to end, since CLIs write their session files
// as they go, to a home the test is about to remove.
type Tmux struct {
	t         testing.TB
	bin, sock string
	windows   []string
}

// StartTmux starts a tmux server on the socket dir/tmux.sock with one
// window, main, of width × height, running argv in cwd. env is the
// environment of tmux itself, which its windows inherit; nil is this
// process's.
func StartTmux(t testing.TB, dir, cwd string, env []string, width, height int, argv ...string) *Tmux {
	t.Helper()
	m := &Tmux{t: t, bin: Tool(t, "tmux", "tmux"), sock: filepath.Join(dir, "tmux.sock"), windows: []string{"main"}}
	args := append([]string{"-S", m.sock, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", "main",
		"-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "-c", cwd}, argv...)
	cmd := exec.Command(m.bin, args...)
	cmd.Dir, cmd.Env = cwd, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(m.close)
	return m
}

func (m *Tmux) close() {
	if m.t.Failed() {
		for _, w := range m.windows {
			m.t.Logf("the screen of tmux window %s:\n%s", w, m.Window(w).Screen())
		}
	}
	var programs []int
	out, _ := exec.Command(m.bin, "-S", m.sock, "list-panes", "-a", "-F", "#{pane_pid}").Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			programs = append(programs, ProcessTree(pid)...)
		}
	}
	_ = exec.Command(m.bin, "-S", m.sock, "kill-server").Run()
	EndPrograms(m.t, programs)
}

// Socket is the path of the server's socket.
func (m *Tmux) Socket() string { return m.sock }

// Run runs a tmux command on the server and returns its output; an error
// fails the test.
func (m *Tmux) Run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command(m.bin, append([]string{"-S", m.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Main is the pane of the first window.
func (m *Tmux) Main() Pane { return m.Window("main") }

// NewWindow opens a window, name, running argv in cwd.
func (m *Tmux) NewWindow(name, cwd string, argv ...string) Pane {
	m.t.Helper()
	m.Run(append([]string{"new-window", "-d", "-n", name, "-c", cwd}, argv...)...)
	m.windows = append(m.windows, name)
	return m.Window(name)
}

// Window is the pane of the window name.
func (m *Tmux) Window(name string) Pane { return Pane{m: m, target: "=main:" + name} }

// Pane is one pane of a Tmux server: a TUI.
type Pane struct {
	m      *Tmux
	target string
}

// Screen is the pane's visible text, wrapped lines joined.
func (p Pane) Screen() string {
	out, _ := exec.Command(p.m.bin, "-S", p.m.sock, "capture-pane", "-p", "-J", "-t", p.target).Output()
	return string(out)
}

// Type types text literally.
func (p Pane) Type(text string) {
	p.m.t.Helper()
	p.m.Run("send-keys", "-t", p.target, "-l", text)
}

// Press presses key, named as tmux names it.
func (p Pane) Press(key string) {
	p.m.t.Helper()
	p.m.Run("send-keys", "-t", p.target, key)
}

// Keys presses keys, each named as tmux names it, in one go.
func (p Pane) Keys(keys ...string) {
	p.m.t.Helper()
	p.m.Run(append([]string{"send-keys", "-t", p.target}, keys...)...)
}

// PID is the pid of the program the pane runs.
func (p Pane) PID() int {
	p.m.t.Helper()
	pid, _ := strconv.Atoi(strings.TrimSpace(p.m.Run("display-message", "-p", "-t", p.target, "#{pane_pid}")))
	return pid
}
