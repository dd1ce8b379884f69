package editors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// nvimLSPConfig is the configuration docs/lsp.md gives for Neovim's
// built-in client (0.7 and later), read from the docs so that it is what
// is tested: gemkit attached to every buffer, and the cursor reported
// when it rests. It is a format with the gemkit binary's place (%q).
func nvimLSPConfig(t *testing.T) string {
	return docsLSPBlock(t, "Neovim (built-in client, 0.7 and later)", "lua", "{ 'gemkit', 'ide',", "{ %q, 'ide',")
}

// startNvimLSP runs the real Neovim headless with no gemkit plugin, its
// built-in LSP client configured as docs/lsp.md says.
func startNvimLSP(t *testing.T, h *harness, bin, gemkit string) *nvimDriver {
	return startNvimWith(t, h, bin, fmt.Sprintf(nvimLSPConfig(t), gemkit))
}

// startNvimTmux runs the real Neovim in a tmux pane (its :terminal needs
// one) with initLua as its only configuration and env added to the
// harness's; it returns the driver and a reader of the pane's screen.
func startNvimTmux(t *testing.T, h *harness, bin, tmuxBin, initLua string, env []string) (*nvimDriver, func() string) {
	init := filepath.Join(h.home, "init.lua")
	if err := os.WriteFile(init, []byte(initLua), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.tmp, "nvim.sock")
	argv := append(append(append([]string{"env", "-i"}, h.env()...), env...), bin, "--listen", sock, "-n", "-i", "NONE", "-u", init)
	tmux := gemkittest.StartTmux(t, h.tmp, h.ws, nil, 200, 50, argv...)
	var rpc *nvimRPC
	var err error
	waitFor(t, "nvim's RPC socket", func() bool { rpc, err = dialNvim(sock); return err == nil })
	t.Cleanup(func() { rpc.Close() })
	d := &nvimDriver{rpc: rpc, tmux: tmux}
	d.pid = int(d.lua(t, `return vim.json.encode(vim.fn.getpid())`).(float64))
	return d, tmux.Main().Screen
}

// nvimTerminal is a CLI's TUI in a :terminal of the Neovim startNvimTmux
// runs: keys go in through Neovim (nvim_input, in terminal mode) and the
// screen is the tmux pane Neovim draws in.
type nvimTerminal struct {
	t      *testing.T
	d      *nvimDriver
	screen func() string
}

func (u nvimTerminal) Screen() string { return u.screen() }

func (u nvimTerminal) Type(text string) {
	u.d.terminalMode(u.t)
	u.d.input(u.t, strings.ReplaceAll(text, "<", "<lt>"))
}

// Press presses key, named as tmux names it (Enter, Escape, Up, C-u), in
// Neovim's notation.
func (u nvimTerminal) Press(key string) {
	switch key {
	case "Enter":
		key = "CR"
	case "Escape":
		key = "Esc"
	}
	u.d.terminalMode(u.t)
	u.d.input(u.t, "<"+key+">")
}

// waitScreen waits, up to two minutes (a CLI starting up), until the
// screen meets cond.
func waitScreen(t *testing.T, screen func() string, what string, cond func(string) bool) {
	t.Helper()
	gemkittest.WaitScreen(t, screen, what, cond)
}

// wantOutcome reads the real client's answer to an openDiff: status, and
// the content when accepted. It returns what the client found on disk
// once the answer had come (nil: no file), as the CLI reads it then.
func (r *realClient) wantOutcome(t *testing.T, status, content string) *string {
	t.Helper()
	var res struct {
		Status  string
		Content *string
		OnDisk  *string
	}
	r.read(t, &res)
	if res.Status != status || (status == "accepted") != (res.Content != nil) || (res.Content != nil && *res.Content != content) {
		t.Fatalf("IdeClient.openDiff = %+v; want %s %q", res, status, content)
	}
	return res.OnDisk
}

// waitPrompt waits until nvim blocks on a prompt (showMessageRequest's
// inputlist, the code action menu), then types keys into it.
func (d *nvimDriver) answerPrompt(t *testing.T, keys string) {
	t.Helper()
	waitFor(t, "a prompt in nvim", func() bool {
		m, _ := d.rpc.call("nvim_get_mode")
		mm, _ := m.(map[string]any)
		return mm["blocking"] == true
	})
	d.input(t, keys)
	waitFor(t, "the prompt answered", func() bool {
		m, _ := d.rpc.call("nvim_get_mode")
		mm, _ := m.(map[string]any)
		return mm["blocking"] == false
	})
}

// TestLSPNeovim attaches the built-in LSP client of the real Neovim (0.7
// and 0.10) to `gemkit ide serve --editor lsp` and drives it as a person
// would, with the real Gemini CLI client code (IdeClient) on the other
// end, as a `gemini` run in Neovim's terminal: the open and active file,
// a selection (charwise Visual mode, then a code action on it), a diff of
// an open file edited and accepted by saving, one that adds lines at the
// end saved as it is (the file on disk is the proposal, byte for byte),
// one rejected through the code action menu, and a diff of a new file
// accepted.
func TestLSPNeovim(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPNeovim(t, v)
		})
	}
}

func testLSPNeovim(t *testing.T, v neovim) {
	bin := v.require(t)
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	d := startNvimLSP(t, h, bin, gemkittest.Gemkit(t))
	a := h.path("a.go")
	d.Open(t, a, 3, 2)
	discPath, disc := discoveryFile(t, h, d.PID())
	if info, _ := disc["ideInfo"].(map[string]any); info["displayName"] != "Neovim" {
		t.Fatalf("discovery file ideInfo %v; want Neovim's clientInfo", disc["ideInfo"])
	}

	// A terminal in Neovim: the CLI finds Neovim among its ancestors.
	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	if conn.Status != "connected" || conn.IDE != "Neovim" || !conn.Diffing {
		t.Fatalf("IdeClient.connect: %+v; want connected to Neovim with diffing", conn)
	}

	// The cursor rests (CursorHold): documentHighlight names it.
	d.command(t, "doautocmd CursorHold")
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 2})

	// A selection: "func main" in charwise Visual mode, then a code
	// action on it, as docs/lsp.md says for each release (the only way
	// Neovim's client tells a server of one).
	d.lua(t, `vim.api.nvim_win_set_cursor(0, { 3, 0 })`)
	d.input(t, "v8l"+nvimSelectionCodeAction(v))
	if f := rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 10}); f.SelectedText != "func main" {
		t.Fatalf("the real client never saw the selection: %+v", f)
	}
	d.input(t, "<Esc>")

	accepted := lspNeovimAcceptDiffs(t, d, rc, a)

	lspNeovimRejectDiff(t, d, rc, a, accepted)

	// A new file: its proposal lands in a buffer Neovim loads; the
	// person opens it, edits it and saves.
	n := h.path("new.go")
	rc.send(t, map[string]any{"op": "openDiff", "path": n, "content": "package main\n\nfunc New() {}\n"})
	d.answerPrompt(t, "3<CR>")
	d.command(t, "edit "+escapeEx(n))
	if got := d.BufferText(t, n); got != "package main\n\nfunc New() {}\n" {
		t.Fatalf("new.go's buffer holds %q", got)
	}
	if _, err := os.Stat(n); err == nil {
		t.Fatal("new.go exists before any answer")
	}
	d.command(t, "normal! Go// mine")
	d.command(t, "write")
	rc.wantOutcome(t, "accepted", "package main\n\nfunc New() {}\n// mine\n")

	logPath, _ := d.lua(t, `return vim.lsp.get_log_path()`).(string)
	rc.send(t, map[string]any{"op": "quit"})
	d.Quit(t)
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("nvim did not exit")
	}
	waitFor(t, "the discovery file removed", func() bool { _, err := os.Stat(discPath); return os.IsNotExist(err) })
	// Nobody wrote new.go after it was accepted by saving: gemkit put
	// the saved text back before it stopped.
	gemkittest.WaitFile(t, n, "package main\n\nfunc New() {}\n// mine\n")
	noDeprecations(t, h)
	// Neovim logs a server's stderr as [ERROR]: where gemkit serves goes
	// to window/logMessage instead, which it logs (if at all) as info.
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "IDE companion serving") {
		t.Errorf("%s has gemkit's start-up line from stderr:\n%s", logPath, b)
	}
}

// lspNeovimAcceptDiffs accepts two diffs of the open file a by saving
// it: one the person edits first, one saved as proposed. It returns
// what a then holds.
func lspNeovimAcceptDiffs(t *testing.T, d *nvimDriver, rc *realClient, a string) string {
	t.Helper()
	// A diff of the open file: shown in its buffer, asked about; the
	// person edits it first, then saves.
	proposal := strings.Replace(fileA, "hi", "hello", 1)
	rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": proposal})
	d.answerPrompt(t, "3<CR>") // Edit first
	if got := d.BufferText(t, a); got != proposal {
		t.Fatalf("a.go's buffer holds %q, want the proposal", got)
	}
	if fileOf(t, a) != fileA {
		t.Fatal("a.go changed on disk before any answer")
	}
	d.command(t, "normal! Go// edited by hand")
	d.command(t, "write")
	accepted := proposal + "// edited by hand\n"
	// The CLI finds the file as it was when it proposed the change (so
	// it sees the real change), then writes what was accepted; Neovim
	// has no conflict with it.
	if onDisk := rc.wantOutcome(t, "accepted", accepted); onDisk == nil || *onDisk != fileA {
		t.Fatalf("the CLI found %v on disk once the answer came, want the text it proposed against", onDisk)
	}
	if err := os.WriteFile(a, []byte(accepted), 0o644); err != nil {
		t.Fatal(err)
	}
	d.command(t, "checktime")
	if m := d.Messages(t); strings.Contains(m, "W11") || strings.Contains(m, "W12") {
		t.Fatalf("Neovim reports a conflict with the file on disk: %s", m)
	}

	// Lines added at the end, saved as proposed: the buffer, the
	// accepted text and the file Neovim wrote are the proposal, byte for
	// byte (Neovim 0.10 gained an empty line from an edit that starts
	// after the last line). Here the CLI does not write the file: gemkit
	// puts Neovim's saved bytes back once it has waited for the CLI.
	grown := accepted + "// one\n// two\n"
	rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": grown})
	d.answerPrompt(t, "3<CR>")
	if got := d.BufferText(t, a); got != grown {
		t.Fatalf("a.go's buffer holds %q, want the proposal %q", got, grown)
	}
	d.command(t, "write")
	if onDisk := rc.wantOutcome(t, "accepted", grown); onDisk == nil || *onDisk != accepted {
		t.Fatalf("the CLI found %v on disk once the answer came, want %q", onDisk, accepted)
	}
	gemkittest.WaitFile(t, a, grown)
	return grown
}

// lspNeovimRejectDiff rejects a diff of a through the code action menu
// and checks the buffer holds accepted again.
func lspNeovimRejectDiff(t *testing.T, d *nvimDriver, rc *realClient, a, accepted string) {
	t.Helper()
	// Rejected through the code action menu: the buffer is as before.
	rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": "package main\n"})
	d.answerPrompt(t, "3<CR>")
	waitFor(t, "the second proposal in a.go's buffer", func() bool { return d.BufferText(t, a) == "package main\n" })
	d.input(t, ":lua vim.lsp.buf.code_action()<CR>")
	d.answerPrompt(t, "2<CR>") // Reject proposal (gemkit)
	rc.wantOutcome(t, "rejected", "")
	waitFor(t, "a.go's buffer restored", func() bool { return d.BufferText(t, a) == accepted })
	if fileOf(t, a) != accepted {
		t.Fatal("a.go changed on disk after a reject")
	}
	// Restored, but marked modified (no LSP request marks a buffer
	// saved), as docs/lsp.md says; :e! reloads it unmodified.
	if m, _ := d.lua(t, `return vim.json.encode(vim.bo.modified)`).(bool); !m {
		t.Error("a.go's buffer is unmodified after the reject: docs/lsp.md says otherwise")
	}
	d.command(t, "edit!")
	if m, _ := d.lua(t, `return vim.json.encode(vim.bo.modified)`).(bool); m || d.BufferText(t, a) != accepted {
		t.Fatalf("after :e! a.go's buffer is modified %v, holds %q", m, d.BufferText(t, a))
	}
}

// nvimSelectionCodeAction is what docs/lsp.md has a person type in Visual
// mode to tell gemkit of the selection: Neovim 0.7's range code action
// reads the '< and '> marks once ":" has ended Visual mode; from 0.8,
// vim.lsp.buf.code_action() reads the selection itself, so it must run
// while Visual mode lasts (a mapping; <Cmd> here).
func nvimSelectionCodeAction(v neovim) string {
	if v.version == "0.7" {
		return ":lua vim.lsp.buf.range_code_action()<CR>"
	}
	return "<Cmd>lua vim.lsp.buf.code_action()<CR>"
}

func fileOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nvimTwoServersConfig starts two gemkit language servers, one for Go
// files and one for Python files, as editors do per language.
const nvimTwoServersConfig = `
local function server(name, pattern)
  local id = vim.lsp.start_client({
    name = name,
    cmd = { %q, 'ide', 'serve', '--editor', 'lsp' },
    root_dir = vim.fn.getcwd(),
  })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    pattern = pattern,
    callback = function(args) vim.lsp.buf_attach_client(args.buf, id) end,
  })
end
server('gemkit-go', '*.go')
server('gemkit-py', '*.py')
vim.api.nvim_create_autocmd('CursorHold', {
  callback = function() pcall(vim.lsp.buf.document_highlight) end,
})
`

// TestLSPNeovimTwoServers: two gemkit servers of one Neovim and workspace
// (one per language) look like one IDE to the real IdeClient: one
// discovery file, both servers' files in its context, a diff shown once.
func TestLSPNeovimTwoServers(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPNeovimTwoServers(t, v)
		})
	}
}

func testLSPNeovimTwoServers(t *testing.T, v neovim) {
	bin := v.require(t)
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	h := newHarness(t)
	h.write(t, "c.py", "print(1)\n")
	d := startNvimWith(t, h, bin, fmt.Sprintf(nvimTwoServersConfig, gemkittest.Gemkit(t)))
	t.Cleanup(func() {
		if t.Failed() { // the servers' stderr, as Neovim logged it
			b, _ := os.ReadFile(filepath.Join(h.home, ".cache", "nvim", "lsp.log"))
			t.Logf("lsp.log:\n%s", b)
		}
	})

	a, c := h.path("a.go"), h.path("c.py")
	d.Open(t, a, 1, 1)
	d.Open(t, c, 1, 1)
	waitFor(t, "both servers running", func() bool {
		n, _ := d.lua(t, `return #(vim.lsp.get_clients or vim.lsp.get_active_clients)()`).(int64)
		return n == 2
	})
	discPath, _ := discoveryFile(t, h, d.PID())

	rc, conn := connectRealClient(t, h, node, interop, d.PID())
	if conn.Status != "connected" {
		t.Fatalf("IdeClient.connect: %+v", conn)
	}
	// a.go (the Go server's) then c.py (the Python server's), active.
	d.command(t, "edit "+escapeEx(a))
	d.command(t, "doautocmd CursorHold")
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 1, "character": 1})
	d.command(t, "edit "+escapeEx(c))
	d.command(t, "doautocmd CursorHold")
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": c, "line": 1, "character": 1})
	// The Python server has told the companion of c.py: it had joined the
	// Go server's, or written a discovery file of its own, before.
	if m, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*.json")); len(m) != 1 {
		t.Fatalf("discovery files %v; want one for both servers", m)
	}

	// A diff of the Python file: one prompt, one proposal, accepted by
	// saving.
	rc.send(t, map[string]any{"op": "openDiff", "path": c, "content": "print(2)\n"})
	d.answerPrompt(t, "3<CR>")
	if got := d.BufferText(t, c); got != "print(2)\n" {
		t.Fatalf("c.py's buffer holds %q", got)
	}
	d.command(t, "write")
	rc.wantOutcome(t, "accepted", "print(2)\n")
	if m, _ := d.rpc.call("nvim_get_mode"); m.(map[string]any)["blocking"] == true {
		t.Fatal("a second prompt: the diff was shown twice")
	}
	rc.send(t, map[string]any{"op": "quit"})
	d.Quit(t)
	<-d.Exited()
	waitFor(t, "the discovery file removed", func() bool { _, err := os.Stat(discPath); return os.IsNotExist(err) })
}
