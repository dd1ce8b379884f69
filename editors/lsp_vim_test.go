package editors_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// aleVimrc is the ~/.vimrc that docs/lsp.md gives under "### Vim (ALE)",
// with gemkit's executable named by its path.
func aleVimrc(t *testing.T, gemkit string) string {
	return docsLSPBlock(t, "Vim (ALE)", "vim", `'executable': 'gemkit',`, `'executable': `+vimString(gemkit)+`,`)
}

// docsLSPBlock is the lang code block under the heading "### heading" of
// docs/lsp.md, read from the docs so that they are what is tested, with
// its one naming of gemkit's executable, exe, replaced by with.
func docsLSPBlock(t *testing.T, heading, lang, exe, with string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gemkittest.RepoRoot(t), "docs", "lsp.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n### " + regexp.QuoteMeta(heading) + "\n.*?\n```" + lang + "\n(.*?\n)```\n").FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/lsp.md: no %s block under ### %s", lang, heading)
	}
	block := string(m[1])
	if strings.Count(block, exe) != 1 {
		t.Fatalf("docs/lsp.md's block under ### %s does not name %s once:\n%s", heading, exe, block)
	}
	return strings.Replace(block, exe, with, 1)
}

// startVimALE runs the real Vim in a tmux pane with ~/.vimrc as docs/lsp.md
// gives it for ALE; the test reads Vim's state over a channel opened after
// start-up (-c), outside the configuration.
func startVimALE(t *testing.T, h *harness, bin, tmux, gemkit string) *vimDriver {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.home, ".vimrc"), []byte(aleVimrc(t, gemkit)), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := fmt.Sprintf("let g:gemkit_test_channel = ch_open('127.0.0.1:%d', {'mode': 'json', 'waittime': 5000})", ln.Addr().(*net.TCPAddr).Port)
	d := &vimDriver{tmuxPane: startTmux(t, h, tmux, "vim", bin, "-i", "NONE", "-n", "-c", open)}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	select {
	case c := <-accepted:
		d.ch = &vimChannel{conn: c, dec: json.NewDecoder(c)}
		t.Cleanup(func() { c.Close() })
	case <-time.After(waitTimeout):
		t.Fatal("vim did not open the test channel")
	}
	if err := json.Unmarshal(d.eval(t, "getpid()"), &d.pid); err != nil {
		t.Fatal(err)
	}
	d.exited = watchExit(d.pid)
	if got := d.evalString(t, "execute('scriptnames')"); !strings.Contains(got, "/plugin/ale.vim") {
		t.Fatalf("ALE not loaded by packadd!; scripts:\n%s", got)
	}
	return d
}

// TestLSPVimALE runs the real Vim with ALE (Debian's vim-ale) and exactly
// the ~/.vimrc docs/lsp.md gives, no gemkit plugin, typed into as a person
// would in a tmux pane, with the real Gemini CLI client code (IdeClient)
// on the other end: gemkit starts once a file is opened; the open and
// active file, the cursor (ALE's hover when it rests), a selection
// (Visual mode, then :'<,'>ALECodeAction) reach the client; diffing is
// off for the client (ALE cannot apply a server's edits); :qa! ends Vim,
// gemkit and the discovery file.
func TestLSPVimALE(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "vim", "vim-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	gemkit := gemkittest.Gemkit(t)
	d := startVimALE(t, h, bin, tmux, gemkit)
	screen := func() string {
		out, _ := exec.Command(tmux, "-S", d.sock, "capture-pane", "-p").Output()
		return string(out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if m, err := d.ch.eval("execute('messages')"); err == nil {
				t.Logf("vim :messages: %s", m)
			}
		}
	})

	// 1. No server before a file is opened: once Vim has started, with no
	// timer pending (ALE checks a buffer on one) and after the cursor has
	// rested (CursorHold, where ALE hovers), Vim runs no child and there is
	// no discovery file. Then gemkit starts (ALE's first check of the
	// buffer) and writes the discovery file naming Vim.
	idle := func() bool { return string(d.eval(t, "v:vim_did_enter && empty(timer_info())")) == "1" }
	waitFor(t, "Vim started, no timer pending", idle)
	d.eval(t, "execute('doautocmd CursorHold')")
	waitFor(t, "no timer pending after CursorHold", idle)
	if kids := gemkittest.ProcessTree(d.PID())[1:]; len(kids) != 0 {
		t.Fatalf("processes %v under Vim before any file was opened", kids)
	}
	if m, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*.json")); len(m) != 0 {
		t.Fatalf("discovery files %v before any file was opened", m)
	}
	a := h.path("a.go")
	d.ex(t, "edit "+escapeEx(a))
	// ALE checks a buffer 200 ms (g:ale_lint_delay) after it is entered.
	waitSlow(t, "gemkit's discovery file", func() bool {
		m, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*.json"))
		return len(m) > 0
	})
	discPath, disc := discoveryFile(t, h, d.PID())
	if info, _ := disc["ideInfo"].(map[string]any); info["name"] != "vim" || info["displayName"] != "Vim" || disc["workspacePath"] != h.ws {
		t.Fatalf("discovery file %v; want ideInfo vim/Vim and workspace %s", disc, h.ws)
	}
	gemkitPIDs := programsOf(t, d.PID(), gemkit)
	if len(gemkitPIDs) != 1 {
		t.Fatalf("gemkit processes under Vim: %v; want the one ALE started", gemkitPIDs)
	}

	// The CLI in a terminal beside Vim: it finds Vim by its pid.
	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	// ALE cannot apply a server's edits, so gemkit lists no openDiff or
	// closeDiff: the CLI takes diffing as off, asks in its own terminal
	// and writes files itself.
	if conn.Status != "connected" || conn.IDE != "Vim" || conn.Diffing {
		t.Fatalf("IdeClient.connect: %+v; want connected to Vim, diffing off", conn)
	}

	// 2. The open file (ALE's didOpen) is in the client's context, active.
	if f := rc.waitFile(t, map[string]any{"op": "waitOpen", "path": a}); !f.IsActive {
		t.Fatalf("a.go in the client's context: %+v; want it active", f)
	}

	// 3. The cursor rests somewhere new (line 4, after the tab and "p"):
	// ALE's hover on CursorHold names it.
	d.keys(t, "4G0ll")
	if f := rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 4, "character": 3}); f.SelectedText != "" {
		t.Fatalf("a.go's cursor at 4:3 with %q selected; want no selection", f.SelectedText)
	}

	// 4. "func main" selected in Visual mode, then the code actions on it.
	// Typing ":" in Visual mode leaves the cursor at the selection's start
	// (3:1), where ALE's next hover asks: the selection stays.
	d.keys(t, "3G0v8l:")
	waitScreen(t, screen, "Vim's command line for the selection", func(s string) bool { return strings.Contains(s, ":'<,'>") })
	d.keys(t, "ALECodeAction", "Enter")
	if f := rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 1}); f.SelectedText != "func main" {
		t.Fatalf("a.go after :'<,'>ALECodeAction and the hover at 3:1: %q selected; want \"func main\"", f.SelectedText)
	}
	// With no proposal, gemkit offers no action; ALE says so, no prompt.
	waitScreen(t, screen, "ALE's answer to :ALECodeAction", func(s string) bool {
		return strings.Contains(s, "No code actions received from server")
	})
	if m := d.evalString(t, "mode()"); m != "n" {
		t.Fatalf("Vim in mode %q after :ALECodeAction; want Normal mode", m)
	}

	// 5. :qa! ends Vim, then gemkit, which removes its discovery file.
	rc.send(t, map[string]any{"op": "quit"})
	d.ex(t, "qa!")
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("vim did not exit")
	}
	waitFor(t, "gemkit gone", func() bool { return !gemkittest.AnyRunning(gemkitPIDs) })
	waitFor(t, "the discovery file removed", func() bool { _, err := os.Stat(discPath); return os.IsNotExist(err) })
}

// waitSlow polls cond for up to a minute: a wait on Vim's timers (ALE's
// lint delay, 'updatetime') on a loaded machine.
func waitSlow(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// cond reads the real Vim's state, which tells no one when it changes.
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, cond) {
		t.Fatalf("timed out after a minute waiting for %s", what)
	}
}

// programsOf lists the processes under pid that run the program bin,
// found by the file their executable is, whatever path started it.
func programsOf(t *testing.T, pid int, bin string) []int {
	t.Helper()
	binFile, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range gemkittest.ProcessTree(pid) {
		if fi, err := os.Stat(fmt.Sprintf("/proc/%d/exe", p)); err == nil && os.SameFile(fi, binFile) {
			pids = append(pids, p)
		}
	}
	return pids
}
