package editors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestMain removes the gemkit binary gemkittest.Gemkit builds once for
// every editor's test.
func TestMain(m *testing.M) { os.Exit(gemkittest.Main(m)) }

// waitTimeout bounds every wait for the editor, the companion or a CLI:
// generous, since a wait that passes costs no more for it, and on a loaded
// two-core machine running other tests at once a CLI written in Node can
// take tens of seconds to act on what it was told.
const waitTimeout = time.Minute

// requireEditor finds an editor binary (Debian's neovim, vim-nox,
// emacs-nox, which scripts/setup-and-test installs); a missing one fails.
func requireEditor(t *testing.T, name, pkg string) string {
	t.Helper()
	return gemkittest.Tool(t, name, pkg)
}

// harness is the private world an editor runs in: a workspace with files,
// a private TMPDIR (where the discovery file lands) and HOME.
type harness struct {
	ws, tmp, home string
	discoveryDir  string
}

func newHarness(t *testing.T) *harness {
	root := t.TempDir()
	h := &harness{
		ws:   filepath.Join(root, "ws"),
		tmp:  filepath.Join(root, "tmp"),
		home: filepath.Join(root, "home"),
	}
	h.discoveryDir = filepath.Join(h.tmp, filepath.FromSlash(ide.DiscoveryDirName))
	for _, d := range []string{h.ws, h.tmp, h.home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Resolve symlinks so that paths compare equal to the editor's.
	ws, err := filepath.EvalSymlinks(h.ws)
	if err != nil {
		t.Fatal(err)
	}
	h.ws = ws
	h.write(t, "a.go", fileA)
	h.write(t, "b.txt", "one\ntwo\nthree\n")
	return h
}

const fileA = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

func (h *harness) path(name string) string { return filepath.Join(h.ws, name) }

func (h *harness) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(h.path(name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// env is the editor's environment: this process's, without any Gemini
// CLI IDE variables, with the private TMPDIR and HOME.
func (h *harness) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		// A CI marker makes the real Gemini CLI in an editor's terminal
		// take itself for non-interactive and exit (the is-in-ci package
		// it uses: CI, CONTINUOUS_INTEGRATION or any CI_* variable).
		case k == "CI", k == "CONTINUOUS_INTEGRATION", strings.HasPrefix(k, "CI_"):
			continue
		case strings.HasPrefix(k, "GEMINI_CLI_IDE_"), strings.HasPrefix(k, "QWEN_"), strings.HasPrefix(k, "XDG_"),
			strings.HasPrefix(k, "LC_"), k == "LANG", k == "LANGUAGE",
			k == "TMPDIR", k == "HOME", k == "CLAUDE_CONFIG_DIR", k == "TERM", k == "VIMINIT", k == "EXINIT", k == "NVIM", k == "NVIM_LISTEN_ADDRESS":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"LANG=C.UTF-8", // editors read and type UTF-8, as in any modern locale
		"TMPDIR="+h.tmp,
		"HOME="+h.home,
		"XDG_CONFIG_HOME="+filepath.Join(h.home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(h.home, ".local/share"),
		"XDG_STATE_HOME="+filepath.Join(h.home, ".local/state"),
		"XDG_CACHE_HOME="+filepath.Join(h.home, ".cache"),
	)
}

// driver is one real editor running with its gemkit plugin. Every method
// drives the editor through its own commands and fails the test on error.
type driver interface {
	PID() int
	// Open edits path in the current window and puts the cursor on line,
	// col (both 1-based).
	Open(t *testing.T, path string, line, col int)
	// SelectLines selects whole lines from..to, the cursor ending on to.
	SelectLines(t *testing.T, from, to int)
	// Unselect ends the selection.
	Unselect(t *testing.T)
	// OpenTerminal opens a terminal running a shell in a window beside the
	// current one, where a person runs gemini or claude; focus stays in
	// the file's window.
	OpenTerminal(t *testing.T)
	// ToTerminal moves focus from the file's window (and its selection) to
	// the terminal's with the editor's window keys; FromTerminal moves back.
	ToTerminal(t *testing.T)
	FromTerminal(t *testing.T)
	// OpenPrompt starts typing a command (Vim's command line, Emacs's M-x);
	// ClosePrompt abandons it.
	OpenPrompt(t *testing.T)
	ClosePrompt(t *testing.T)
	// SelectAll selects the whole buffer.
	SelectAll(t *testing.T)
	// Find edits path with the cursor on the first match of needle.
	Find(t *testing.T, path, needle string)
	// SelectText selects the text from the cursor to the end of needle,
	// which starts at the cursor, character by character.
	SelectText(t *testing.T, needle string)
	// Diff reports the diff view of path the editor shows, if any.
	Diff(t *testing.T, path string) (view diffView, ok bool)
	// AppendRight adds line at the end of the right side of path's diff.
	AppendRight(t *testing.T, path, line string)
	// Accept and Reject answer the diff shown with the plugin's commands;
	// CloseView closes the diff's window(s) the editor's usual way.
	Accept(t *testing.T, path string)
	Reject(t *testing.T, path string)
	CloseView(t *testing.T, path string)
	// BufferText is the text of the buffer visiting path.
	BufferText(t *testing.T, path string) string
	// SaveAs writes the current buffer to newPath and visits it there.
	SaveAs(t *testing.T, newPath string)
	// CloseFile kills the buffer visiting path.
	CloseFile(t *testing.T, path string)
	// Cd changes the editor's current directory.
	Cd(t *testing.T, dir string)
	// Getenv reads the editor's own environment.
	Getenv(t *testing.T, name string) string
	// Messages is what the editor told the person (:messages, *Messages*).
	Messages(t *testing.T) string
	// Quit ends the editor.
	Quit(t *testing.T)
	// Exited is closed when the editor process has ended.
	Exited() <-chan struct{}
}

// proposalWriter is a driver whose proposals are accepted by writing them
// (Vim and Neovim).
type proposalWriter interface {
	// Hint is the status line of path's proposal window.
	Hint(t *testing.T, path string) string
	// WriteQuit types :wq in path's proposal window.
	WriteQuit(t *testing.T, path string)
}

// diffView is what the editor shows for one diff.
type diffView struct {
	Left, Right string
	// Visible: the diff is on screen, both sides in diff mode.
	Visible bool
}

// waitFor polls cond until it holds or the wait times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// cond reads a real editor's or pane's state, which tells no one when
	// it changes.
	if !gemkittest.Poll(waitTimeout, 20*time.Millisecond, cond) {
		t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
	}
}

// discoveryFile waits for the companion's discovery file named for pid.
func discoveryFile(t *testing.T, h *harness, pid int) (string, map[string]any) {
	t.Helper()
	var path string
	var content map[string]any
	pattern := filepath.Join(h.discoveryDir, ide.DiscoveryFilePrefix+strconv.Itoa(pid)+"-*"+ide.DiscoveryFileSuffix)
	waitFor(t, "the discovery file "+pattern, func() bool {
		m, _ := filepath.Glob(pattern)
		if len(m) != 1 {
			return false
		}
		b, err := os.ReadFile(m[0])
		if err != nil || json.Unmarshal(b, &content) != nil {
			return false
		}
		path = m[0]
		return true
	})
	return path, content
}

func activeFile(c *ide.Context) *ide.File {
	if c == nil || c.WorkspaceState == nil {
		return nil
	}
	for i := range c.WorkspaceState.OpenFiles {
		if f := &c.WorkspaceState.OpenFiles[i]; f.IsActive {
			return f
		}
	}
	return nil
}

func hasFile(c *ide.Context, path string) bool {
	if c == nil || c.WorkspaceState == nil {
		return false
	}
	for _, f := range c.WorkspaceState.OpenFiles {
		if f.Path == path {
			return true
		}
	}
	return false
}

func describe(c *ide.Context) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// waitContext polls the client's context until cond holds.
func waitContext(t *testing.T, c *client.Client, what string, cond func(*ide.Context) bool) *ide.Context {
	t.Helper()
	// The client's context follows the real editor's, with no event for a
	// particular state.
	var cur *ide.Context
	if !gemkittest.Poll(waitTimeout, 20*time.Millisecond, func() bool { cur = c.Context(); return cond(cur) }) {
		t.Fatalf("timed out waiting for the context: %s; last context: %s", what, describe(cur))
	}
	return cur
}

// holdContext checks that cond keeps holding for a while after a change
// that must not alter the context: the companion's 50 ms debounce passes
// several times over before it returns.
func holdContext(t *testing.T, c *client.Client, what string, cond func(*ide.Context) bool) {
	t.Helper()
	// Sleeps: what is checked is that nothing changes for a while, which no
	// event can say.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cur := c.Context(); !cond(cur) {
			t.Fatalf("the context changed: want %s; context: %s", what, describe(cur))
		}
	}
}

type editorInfo struct {
	name, displayName string
}

// runScenario is the whole life of a session, the same for every editor:
// discovery, context, the three ways a diff ends, closeDiff, write-file,
// rename, close, delete, a change of directory and quitting.
func runScenario(t *testing.T, h *harness, d driver, want editorInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := &scenario{t: t, h: h, d: d, ctx: ctx}
	s.checkDiscovery(want)

	c, _, err := client.Connect(ctx, client.Options{
		Cwd:    h.ws,
		Dir:    h.discoveryDir,
		IDEPID: d.PID(),
		Getenv: func(string) string { return "" },
		Host:   "127.0.0.1",
	})
	if err != nil {
		t.Fatalf("connect to the editor's companion: %v", err)
	}
	defer c.Close(context.Background())
	s.c = c
	s.a, s.b = h.path("a.go"), h.path("b.txt")

	s.focusAndSelect()
	s.acceptDiffs()
	s.rejectDiffs()
	s.closeDiffs()
	s.beyondASCII()
	s.fileChanges()
	s.changeDirAndQuit()
}

// scenario is what the steps of runScenario share: the editor, the
// client connected to its companion, the discovery file, and the two
// files most steps use.
type scenario struct {
	t        *testing.T
	h        *harness
	d        driver
	ctx      context.Context
	c        *client.Client
	disc     map[string]any
	discPath string
	port     int
	qwenLock string
	a, b     string
}

// checkDiscovery checks the discovery file names the editor and its
// workspace, privately, and that the editor's terminals get the
// variables that lead Gemini CLI and Qwen Code to it; it keeps the
// file's path, contents and port for the later steps.
func (s *scenario) checkDiscovery(want editorInfo) {
	s.t.Helper()
	t, h, d := s.t, s.h, s.d
	// The discovery file names the editor.
	s.discPath, s.disc = discoveryFile(t, h, d.PID())
	info, _ := s.disc["ideInfo"].(map[string]any)
	if info["name"] != want.name || info["displayName"] != want.displayName {
		t.Fatalf("discovery ideInfo = %v, want name %q displayName %q", info, want.name, want.displayName)
	}
	if s.disc["workspacePath"] != h.ws {
		t.Fatalf("discovery workspacePath = %v, want %q", s.disc["workspacePath"], h.ws)
	}
	if fi, err := os.Stat(s.discPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("discovery file mode: %v %v", fi, err)
	}

	// The editor's terminals get the variables that lead gemini to it.
	s.port = int(s.disc["port"].(float64))
	waitFor(t, "the editor's "+ide.EnvServerPort+" = "+strconv.Itoa(s.port), func() bool {
		return d.Getenv(t, ide.EnvServerPort) == strconv.Itoa(s.port)
	})
	if got := d.Getenv(t, ide.EnvAuthToken); got != s.disc["authToken"] {
		t.Fatalf("editor's %s does not hold the discovery file's token", ide.EnvAuthToken)
	}
	if got := d.Getenv(t, ide.EnvPID); got != strconv.Itoa(d.PID()) {
		t.Fatalf("editor's %s = %q, want %d", ide.EnvPID, got, d.PID())
	}
	// Qwen Code's too, and its lock file (it has no token variable).
	if got := d.Getenv(t, ide.EnvQwenServerPort); got != strconv.Itoa(s.port) {
		t.Fatalf("editor's %s = %q, want %d", ide.EnvQwenServerPort, got, s.port)
	}
	s.qwenLock = filepath.Join(h.home, ".qwen", "ide", strconv.Itoa(s.port)+".lock")
	if fi, err := os.Stat(s.qwenLock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Qwen Code lock file: %v %v", fi, err)
	}
}

// focusAndSelect moves the focus, cursor and selection between files
// and the agent's terminal and checks the context follows.
func (s *scenario) focusAndSelect() {
	s.t.Helper()
	t, d, c, a, b := s.t, s.d, s.c, s.a, s.b
	// Focus and cursor.
	d.Open(t, a, 3, 2)
	waitContext(t, c, "a.go active at 3:2", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == a && f.Cursor != nil && *f.Cursor == ide.Cursor{Line: 3, Character: 2} && f.SelectedText == ""
	})

	// A selection of lines 3-4, then none.
	d.SelectLines(t, 3, 4)
	waitContext(t, c, "lines 3-4 of a.go selected", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == a && f.Cursor != nil && f.Cursor.Line == 4 && f.SelectedText == "func main() {\n\tprintln(\"hi\")"
	})
	d.Unselect(t)
	waitContext(t, c, "the selection cleared", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == a && f.SelectedText == ""
	})

	// The selection survives the move to the terminal where the agent
	// runs, as VS Code keeps an editor's selection while its terminal has
	// focus; back in the file, ending the selection clears it.
	d.OpenTerminal(t)
	d.SelectLines(t, 3, 4)
	selected := func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == a && f.SelectedText == "func main() {\n\tprintln(\"hi\")"
	}
	waitContext(t, c, "lines 3-4 of a.go selected", selected)
	d.ToTerminal(t)
	holdContext(t, c, "lines 3-4 of a.go still selected with the terminal focused", selected)
	d.FromTerminal(t)
	d.Unselect(t)
	waitContext(t, c, "the selection cleared back in a.go", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == a && f.SelectedText == ""
	})

	// A second file becomes active; the first stays listed.
	d.Open(t, b, 2, 1)
	waitContext(t, c, "b.txt active at 2:1, a.go listed", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == b && f.Cursor != nil && *f.Cursor == ide.Cursor{Line: 2, Character: 1} && hasFile(cur, a)
	})
}

// acceptDiffs accepts a diff edited by hand, and in Vim and Neovim a
// proposal written with :wq.
func (s *scenario) acceptDiffs() {
	s.t.Helper()
	t, d, ctx, c, a, b := s.t, s.d, s.ctx, s.c, s.a, s.b
	// A diff accepted in the editor after editing its right side.
	proposal := strings.Replace(fileA, "hi", "hello", 1)
	pd, err := c.StartDiff(ctx, a, proposal)
	if err != nil {
		t.Fatalf("openDiff a.go: %v", err)
	}
	view, ok := d.Diff(t, a)
	if !ok || !view.Visible || view.Left != fileA || view.Right != proposal {
		t.Fatalf("diff view of a.go = %+v (shown %v), want left = the file, right = the proposal, visible", view, ok)
	}
	d.AppendRight(t, a, "// edited by hand")
	d.Accept(t, a)
	out, err := pd.Wait(ctx)
	if err != nil || !out.Accepted || out.Content != proposal+"// edited by hand\n" {
		t.Fatalf("accepted diff: outcome %+v, err %v; want accepted with the edit", out, err)
	}
	if _, ok := d.Diff(t, a); ok {
		t.Fatal("the diff view of a.go is still open after accepting")
	}

	// Vim and Neovim: the proposal's status line says how to answer, and
	// writing it accepts it; :wq leaves the editor running.
	if w, ok := d.(proposalWriter); ok {
		pd, err := c.StartDiff(ctx, b, "one\nTWO\nthree\n")
		if err != nil {
			t.Fatalf("openDiff b.txt: %v", err)
		}
		if hint := w.Hint(t, b); !strings.Contains(hint, ":w accepts") || !strings.Contains(hint, ":q rejects") {
			t.Fatalf("the proposal's status line %q does not say how to answer", hint)
		}
		w.WriteQuit(t, b)
		if out, err := pd.Wait(ctx); err != nil || !out.Accepted || out.Content != "one\nTWO\nthree\n" {
			t.Fatalf("proposal written with :wq: outcome %+v, err %v; want accepted", out, err)
		}
		waitFor(t, "the diff view of b.txt closed after :wq", func() bool {
			_, ok := d.Diff(t, b)
			return !ok
		})
		select {
		case <-d.Exited():
			t.Fatal("the editor quit on :wq in the proposal")
		default:
		}
	}
}

// rejectDiffs rejects a diff of a new file, and one that arrived while
// the person typed a command.
func (s *scenario) rejectDiffs() {
	s.t.Helper()
	t, h, d, ctx, c, b := s.t, s.h, s.d, s.ctx, s.c, s.b
	// A diff of a new file, rejected.
	newFile := h.path("c.go")
	pd, err := c.StartDiff(ctx, newFile, "package c\n")
	if err != nil {
		t.Fatalf("openDiff c.go: %v", err)
	}
	if view, ok := d.Diff(t, newFile); !ok || view.Left != "" || view.Right != "package c\n" {
		t.Fatalf("diff view of new c.go = %+v (shown %v), want an empty left side", view, ok)
	}
	d.Reject(t, newFile)
	if out, err := pd.Wait(ctx); err != nil || out.Accepted {
		t.Fatalf("rejected diff: outcome %+v, err %v", out, err)
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Fatalf("a rejected new file exists: %v", err)
	}

	// A diff that arrives while the person types a command waits for the
	// prompt to go instead of failing.
	d.OpenPrompt(t)
	started := make(chan error, 1)
	go func() {
		var err error
		pd, err = c.StartDiff(ctx, b, "one\nzwei\nthree\n")
		started <- err
	}()
	select {
	case err := <-started:
		t.Fatalf("openDiff answered while the editor's prompt was open (err %v); want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	d.ClosePrompt(t)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("openDiff b.txt after the prompt: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("openDiff did not answer after the prompt closed")
	}
	if view, ok := d.Diff(t, b); !ok || !view.Visible {
		t.Fatalf("diff of b.txt after the prompt: %+v shown %v", view, ok)
	}
	d.Reject(t, b)
	if out, err := pd.Wait(ctx); err != nil || out.Accepted {
		t.Fatalf("rejected diff: outcome %+v, err %v", out, err)
	}
}

// closeDiffs ends a diff by closing its view, and one by closeDiff
// from the CLI.
func (s *scenario) closeDiffs() {
	s.t.Helper()
	t, d, ctx, c, b := s.t, s.d, s.ctx, s.c, s.b
	// Closing the diff's view rejects it.
	pd, err := c.StartDiff(ctx, b, "one\n2\nthree\n")
	if err != nil {
		t.Fatalf("openDiff b.txt: %v", err)
	}
	if _, ok := d.Diff(t, b); !ok {
		t.Fatal("no diff view of b.txt")
	}
	d.CloseView(t, b)
	if out, err := pd.Wait(ctx); err != nil || out.Accepted {
		t.Fatalf("diff whose view was closed: outcome %+v, err %v; want rejected", out, err)
	}

	// closeDiff returns the right side, edits included, and closes it.
	pd, err = c.StartDiff(ctx, b, "one\nTWO\nthree")
	if err != nil {
		t.Fatalf("openDiff b.txt: %v", err)
	}
	d.AppendRight(t, b, "four")
	text, ok, err := c.CloseDiff(ctx, b)
	if err != nil || !ok || text != "one\nTWO\nthree\nfour" {
		t.Fatalf("closeDiff b.txt = %q, %v, %v; want the edited right side without a final newline", text, ok, err)
	}
	pd.Abandon()
	if _, ok := d.Diff(t, b); ok {
		t.Fatal("the diff view of b.txt is still open after closeDiff")
	}
	if _, ok, err := c.CloseDiff(ctx, b); err != nil || ok {
		t.Fatalf("second closeDiff b.txt: ok %v, err %v; want null content", ok, err)
	}
}

// beyondASCII checks positions, selections and proposals with text
// beyond ASCII.
func (s *scenario) beyondASCII() {
	s.t.Helper()
	t, h, d, ctx, c := s.t, s.h, s.d, s.ctx, s.c
	// Text beyond ASCII: the character is counted in UTF-16 code units
	// ("héllo 😀 " is 9 of them), a characterwise selection carries its
	// text, and a proposal with non-ASCII text, CRLF line ends, a large
	// body and no final newline round-trips exactly; a second proposal for
	// the same file replaces the first view.
	u := h.path("u.txt")
	h.write(t, "u.txt", "héllo 😀 wörld\nzweite Zeile\n")
	d.Find(t, u, "wörld")
	waitContext(t, c, "u.txt active at 1:10", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == u && f.Cursor != nil && *f.Cursor == ide.Cursor{Line: 1, Character: 10}
	})
	d.Find(t, u, "😀")
	d.SelectText(t, "😀 wö")
	waitContext(t, c, "😀 wö selected", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == u && f.SelectedText == "😀 wö"
	})
	d.Unselect(t)
	pd, err := c.StartDiff(ctx, u, "first proposal\n")
	if err != nil {
		t.Fatalf("openDiff u.txt: %v", err)
	}
	pd.Abandon()
	var big strings.Builder
	big.WriteString("héllo 😀 wörld\r\nzweite Zeile\r\n")
	for i := 0; big.Len() < 256<<10; i++ {
		fmt.Fprintf(&big, "line %d: ünïcödé \t tab\r\n", i)
	}
	big.WriteString("no final newline ✓")
	pd, err = c.StartDiff(ctx, u, big.String())
	if err != nil {
		t.Fatalf("second openDiff u.txt: %v", err)
	}
	if view, ok := d.Diff(t, u); !ok || view.Right != big.String() || view.Left != "héllo 😀 wörld\nzweite Zeile\n" {
		t.Fatalf("replaced diff view of u.txt: shown %v, right matches %v, left %q", ok, view.Right == big.String(), view.Left)
	}
	d.Accept(t, u)
	if out, err := pd.Wait(ctx); err != nil || !out.Accepted || out.Content != big.String() {
		t.Fatalf("accepted large proposal: accepted %v, same text %v (len %d, want %d), err %v", out.Accepted, out.Content == big.String(), len(out.Content), big.Len(), err)
	}
	if _, ok := d.Diff(t, u); ok {
		t.Fatal("a diff view of u.txt is still open after accepting")
	}
}

// fileChanges checks a long selection is cut, then writes, renames,
// closes and deletes files and checks the context follows.
func (s *scenario) fileChanges() {
	s.t.Helper()
	t, h, d, c, disc, port, a, b := s.t, s.h, s.d, s.c, s.disc, s.port, s.a, s.b
	// A selection longer than gemkit's limit arrives cut and marked.
	h.write(t, "long.txt", strings.Repeat("x\n", 20000))
	long := h.path("long.txt")
	d.Find(t, long, "x")
	d.SelectAll(t)
	waitContext(t, c, "the whole of long.txt selected, cut", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == long && f.SelectedText == strings.Repeat("x\n", 8192)+"... [TRUNCATED]"
	})
	d.Unselect(t)

	// A file written through the companion is reloaded in the editor.
	writeFile(t, port, disc["authToken"].(string), b, "rewritten\n")
	waitFor(t, "b.txt reloaded in the editor", func() bool { return d.BufferText(t, b) == "rewritten\n" })

	// Save as: the context follows the file to its new name.
	d.Open(t, b, 1, 1)
	b2 := h.path("b2.txt")
	d.SaveAs(t, b2)
	waitContext(t, c, "b.txt renamed b2.txt", func(cur *ide.Context) bool {
		f := activeFile(cur)
		return f != nil && f.Path == b2 && !hasFile(cur, b)
	})

	// Closing a buffer removes its file.
	d.CloseFile(t, a)
	waitContext(t, c, "a.go closed", func(cur *ide.Context) bool { return !hasFile(cur, a) && hasFile(cur, b2) })

	// Deleting the file on disk removes it.
	if err := os.Remove(b2); err != nil {
		t.Fatal(err)
	}
	waitContext(t, c, "b2.txt deleted", func(cur *ide.Context) bool { return !hasFile(cur, b2) })
}

// changeDirAndQuit moves the workspace with a change of directory,
// then quits the editor, which stops the companion and removes its
// files.
func (s *scenario) changeDirAndQuit() {
	s.t.Helper()
	t, h, d, c, discPath, qwenLock := s.t, s.h, s.d, s.c, s.discPath, s.qwenLock
	// A change of directory moves the workspace.
	sub := h.path("sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	d.Cd(t, sub)
	waitFor(t, "the discovery file naming the new workspace", func() bool {
		b, err := os.ReadFile(discPath)
		var v map[string]any
		return err == nil && json.Unmarshal(b, &v) == nil && v["workspacePath"] == sub
	})
	waitFor(t, "the editor's "+ide.EnvWorkspacePath+" naming the new workspace", func() bool {
		return d.Getenv(t, ide.EnvWorkspacePath) == sub
	})
	if got := d.Getenv(t, ide.EnvQwenWorkspacePath); got != sub {
		t.Fatalf("editor's %s = %q, want %s", ide.EnvQwenWorkspacePath, got, sub)
	}

	// Quitting the editor stops the companion and removes its file.
	d.Quit(t)
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("the editor did not exit")
	}
	waitFor(t, "the discovery file and Qwen Code's lock file removed", func() bool {
		_, err := os.Stat(discPath)
		_, qerr := os.Stat(qwenLock)
		return os.IsNotExist(err) && os.IsNotExist(qerr)
	})
	select {
	case <-c.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the client did not see the companion go")
	}
}

// writeFile asks the companion to write a file, as Gemini CLI does.
func writeFile(t *testing.T, port int, token, path, content string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"path": path, "content": content})
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(port)+ide.WriteFilePath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("write-file: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("write-file: HTTP %d", resp.StatusCode)
	}
}

// startProcess starts an editor and returns a channel closed when it ends.
func startProcess(t *testing.T, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr:\n%s", filepath.Base(cmd.Path), stderr.String())
		}
	})
	return exited
}
