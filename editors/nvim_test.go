package editors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestNeovim runs the real Neovim headless with editors/nvim on its
// runtimepath, driven over its msgpack-RPC socket, on each release the
// plugin is tested on; the plugin calls nothing they deprecate.
func TestNeovim(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			bin := v.require(t)
			h := newHarness(t)
			d := startNvim(t, h, bin, gemkittest.Gemkit(t))
			runScenario(t, h, d, editorInfo{name: "neovim", displayName: "Neovim"})
			noDeprecations(t, h)
		})
	}
}

// neovim is one Neovim release the plugin is tested on.
type neovim struct {
	version, bin, install string
}

// neovims are Debian 12's Neovim 0.7 and current Neovim, Debian trixie's
// 0.10, which scripts/install-neovim-current (run by setup-and-test)
// unpacks as nvim-0.10.
var neovims = []neovim{
	{"0.7", "nvim", "apt-get install -y neovim"},
	{"0.10", "nvim-0.10", "bash scripts/install-neovim-current"},
}

// require finds the release's binary; a missing one fails the test.
func (v neovim) require(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(v.bin)
	if err != nil {
		t.Fatalf("%s (Neovim %s) is not installed: run scripts/setup-and-test, or %s", v.bin, v.version, v.install)
	}
	return p
}

// nvimDeprecationsLua, run first in a test's init.lua, writes every call
// of vim.deprecate (Neovim 0.9+: what warns the person of an API on its
// way out) to the file it names.
const nvimDeprecationsLua = `do
  local file = %q
  local deprecate = vim.deprecate
  if deprecate then
    vim.deprecate = function(name, alternative, version, ...)
      local f = io.open(file, 'a')
      if f then
        f:write(tostring(name), ' -> ', tostring(alternative), ' (', tostring(version), ')\n', debug.traceback(), '\n')
        f:close()
      end
      return deprecate(name, alternative, version, ...)
    end
  end
end
`

func deprecationsFile(h *harness) string { return filepath.Join(h.tmp, "nvim-deprecated.txt") }

// noDeprecations fails the test if the editor called vim.deprecate.
func noDeprecations(t *testing.T, h *harness) {
	t.Helper()
	if b, err := os.ReadFile(deprecationsFile(h)); err == nil && len(b) > 0 {
		t.Errorf("Neovim warned of deprecated APIs:\n%s", b)
	}
}

type nvimDriver struct {
	rpc    *nvimRPC
	pid    int
	exited <-chan struct{}
	tmux   *gemkittest.Tmux // the terminal Neovim runs in, if any (startNvimTmux)
}

func startNvim(t *testing.T, h *harness, bin, gemkit string) *nvimDriver {
	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	return startNvimWith(t, h, bin, fmt.Sprintf(`vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q, args = { '-v' } })
`, plugin, gemkit))
}

// startNvimWith runs nvim headless in h's workspace with initLua as its
// init.lua, after the hook that records deprecations.
func startNvimWith(t *testing.T, h *harness, bin, initLua string) *nvimDriver {
	init := filepath.Join(h.home, "init.lua")
	if err := os.WriteFile(init, []byte(fmt.Sprintf(nvimDeprecationsLua, deprecationsFile(h))+initLua), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.tmp, "nvim.sock")
	cmd := exec.Command(bin, "--headless", "--listen", sock, "-n", "-i", "NONE", "-u", init)
	cmd.Dir = h.ws
	cmd.Env = h.env()
	exited := startProcess(t, cmd)
	var rpc *nvimRPC
	waitFor(t, "nvim's RPC socket", func() bool {
		var err error
		rpc, err = dialNvim(sock)
		return err == nil
	})
	t.Cleanup(func() { rpc.Close() })
	return &nvimDriver{rpc: rpc, pid: cmd.Process.Pid, exited: exited}
}

func (d *nvimDriver) PID() int                { return d.pid }
func (d *nvimDriver) Exited() <-chan struct{} { return d.exited }

// lua runs Lua code in nvim with args as ... and returns its result
// decoded from the JSON the code returns (or nil).
func (d *nvimDriver) lua(t *testing.T, code string, args ...any) any {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	res, err := d.rpc.call("nvim_exec_lua", code, args)
	if err != nil {
		t.Fatalf("nvim: %v", err)
	}
	s, ok := res.(string)
	if !ok {
		return res
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	return v
}

func (d *nvimDriver) command(t *testing.T, cmd string) {
	t.Helper()
	if _, err := d.rpc.call("nvim_command", cmd); err != nil {
		t.Fatalf("nvim :%s: %v", cmd, err)
	}
}

func (d *nvimDriver) input(t *testing.T, keys string) {
	t.Helper()
	if _, err := d.rpc.call("nvim_input", keys); err != nil {
		t.Fatalf("nvim input %q: %v", keys, err)
	}
}

func (d *nvimDriver) Open(t *testing.T, path string, line, col int) {
	d.command(t, "edit "+escapeEx(path))
	d.lua(t, `vim.api.nvim_win_set_cursor(0, { ..., select(2, ...) - 1 })`, line, col)
}

func (d *nvimDriver) SelectLines(t *testing.T, from, to int) {
	d.lua(t, `vim.api.nvim_win_set_cursor(0, { ..., 0 })`, from)
	d.input(t, "V"+strings.Repeat("j", to-from))
}

func (d *nvimDriver) Unselect(t *testing.T) { d.input(t, "<Esc>") }

func (d *nvimDriver) OpenTerminal(t *testing.T) {
	d.command(t, "rightbelow vsplit | terminal")
	d.command(t, "wincmd p")
}

// buftype is the 'buftype' of the current window's buffer, once nvim has
// handled the keys typed before.
func (d *nvimDriver) buftype(t *testing.T) string {
	s, _ := d.lua(t, `return vim.json.encode(vim.bo.buftype)`).(string)
	return s
}

// mode is Neovim's mode as nvim_get_mode names it ("n", "t", "c", "r"
// for a hit-enter prompt, ...).
func (d *nvimDriver) mode() string {
	m, _ := d.rpc.call("nvim_get_mode")
	mm, _ := m.(map[string]any)
	s, _ := mm["mode"].(string)
	return s
}

// terminalMode makes sure keys typed next reach the job of the terminal
// window that has the focus: Neovim takes keys in its own modes first,
// and a message's hit-enter prompt or a mode left by some event would
// swallow a CLI's input (a CI run lost "/ide status" so: the CLI's input
// stayed empty while Enter was pressed for four minutes). Each case it
// puts right is logged, so that a failure says which one it met.
func (d *nvimDriver) terminalMode(t *testing.T) {
	t.Helper()
	m := d.mode()
	if m == "t" {
		return
	}
	if strings.HasPrefix(m, "r") {
		t.Logf("Neovim shows a prompt (mode %q, messages %s): answering it with Enter before typing into the terminal", m, d.Messages(t))
		d.input(t, "<CR>")
		waitFor(t, "Neovim's prompt gone", func() bool { return !strings.HasPrefix(d.mode(), "r") })
		if m = d.mode(); m == "t" {
			return
		}
	}
	if bt := d.buftype(t); bt != "terminal" {
		t.Fatalf("keys for the terminal, but Neovim's focus is in a %q buffer in mode %q; messages: %s", bt, m, d.Messages(t))
	}
	t.Logf("Neovim was in mode %q in the terminal's window (messages %s): entering terminal mode before typing", m, d.Messages(t))
	if m != "n" {
		d.input(t, "<C-\\><C-n>")
		waitFor(t, "Neovim's normal mode", func() bool { return d.mode() == "n" })
	}
	d.command(t, "startinsert")
	waitFor(t, "terminal mode in the terminal's window", func() bool { return d.mode() == "t" })
}

func (d *nvimDriver) ToTerminal(t *testing.T) {
	d.input(t, "<C-w>l")
	waitFor(t, "the terminal's window focused", func() bool { return d.buftype(t) == "terminal" })
}

func (d *nvimDriver) FromTerminal(t *testing.T) {
	d.input(t, "<C-w>h")
	waitFor(t, "the file's window focused", func() bool { return d.buftype(t) == "" })
}

// nvimDiffLua describes the diff view of a path as JSON.
const nvimDiffLua = `
local path = ...
local d = require('gemkit').state().diffs[path]
-- While a diff closes, its buffers and tab go before the plugin's state
-- forgets it: such a diff is no longer shown.
if not d or not vim.api.nvim_buf_is_valid(d.left) or not vim.api.nvim_buf_is_valid(d.right)
  or not vim.api.nvim_tabpage_is_valid(d.tab) then return 'null' end
local function text(b)
  local s = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  if vim.bo[b].endofline then s = s .. '\n' end
  return s
end
local visible = vim.api.nvim_get_current_tabpage() == d.tab
local n = 0
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(d.tab)) do
  local b = vim.api.nvim_win_get_buf(w)
  if (b == d.left or b == d.right) and vim.wo[w].diff then n = n + 1 end
end
return vim.json.encode({ left = text(d.left), right = text(d.right), visible = visible and n == 2 })
`

func (d *nvimDriver) Diff(t *testing.T, path string) (diffView, bool) {
	v, ok := d.lua(t, nvimDiffLua, path).(map[string]any)
	if !ok {
		return diffView{}, false
	}
	return diffView{Left: v["left"].(string), Right: v["right"].(string), Visible: v["visible"].(bool)}, true
}

func (d *nvimDriver) AppendRight(t *testing.T, path, line string) {
	// Go to the proposal's window, then type the line as a person would.
	d.toRight(t, path)
	d.command(t, "normal! Go"+line)
}

// toRight makes the proposal's window of path current.
func (d *nvimDriver) toRight(t *testing.T, path string) {
	d.lua(t, `
local d = require('gemkit').state().diffs[...]
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(d.tab)) do
  if vim.api.nvim_win_get_buf(w) == d.right then vim.api.nvim_set_current_win(w) end
end`, path)
}

func (d *nvimDriver) Hint(t *testing.T, path string) string {
	d.toRight(t, path)
	s, _ := d.lua(t, `return vim.json.encode(vim.wo.statusline)`).(string)
	return s
}

func (d *nvimDriver) WriteQuit(t *testing.T, path string) {
	d.toRight(t, path)
	d.command(t, "wq")
}

func (d *nvimDriver) Accept(t *testing.T, _ string)    { d.command(t, "GemkitAccept") }
func (d *nvimDriver) Reject(t *testing.T, _ string)    { d.command(t, "GemkitReject") }
func (d *nvimDriver) CloseView(t *testing.T, _ string) { d.command(t, "tabclose") }

func (d *nvimDriver) BufferText(t *testing.T, path string) string {
	s, _ := d.lua(t, `
local b = vim.fn.bufnr(vim.fn.fnameescape(...))
if b < 0 or not vim.api.nvim_buf_is_loaded(b) then return '' end
local s = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
if vim.bo[b].endofline then s = s .. '\n' end
return vim.json.encode(s)`, path).(string)
	return s
}

func (d *nvimDriver) SaveAs(t *testing.T, newPath string) { d.command(t, "saveas "+escapeEx(newPath)) }

func (d *nvimDriver) CloseFile(t *testing.T, path string) {
	d.command(t, "bdelete "+escapeEx(path))
}

func (d *nvimDriver) Cd(t *testing.T, dir string) { d.command(t, "cd "+escapeEx(dir)) }

func (d *nvimDriver) Getenv(t *testing.T, name string) string {
	s, _ := d.lua(t, `return vim.json.encode(vim.env[...] or '')`, name).(string)
	return s
}

func (d *nvimDriver) Quit(t *testing.T) {
	// The connection drops as nvim exits, so the call's error is expected.
	ch := make(chan struct{})
	go func() {
		_, _ = d.rpc.call("nvim_command", "qa!")
		close(ch)
	}()
	select {
	case <-ch:
	case <-d.exited:
	case <-time.After(waitTimeout):
		t.Fatal("nvim did not take :qa!")
	}
}

// escapeEx escapes a path for an Ex command line.
func escapeEx(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(" \t\\|\"%#'", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (d *nvimDriver) Find(t *testing.T, path, needle string) {
	d.command(t, "edit "+escapeEx(path))
	d.lua(t, `vim.fn.cursor(1, 1); vim.fn.search('\\V' .. vim.fn.escape(..., '\\'), 'c')`, needle)
}

func (d *nvimDriver) SelectText(t *testing.T, needle string) {
	keys := "v"
	if n := utf8.RuneCountInString(needle) - 1; n > 0 {
		keys += strconv.Itoa(n) + "l"
	}
	d.input(t, keys)
}

func (d *nvimDriver) SelectAll(t *testing.T) { d.input(t, "ggVG") }

func (d *nvimDriver) OpenPrompt(t *testing.T) {
	d.input(t, ":")
	waitFor(t, "nvim's command line", func() bool { return d.mode() == "c" })
}

func (d *nvimDriver) ClosePrompt(t *testing.T) { d.input(t, "<Esc>") }

// terminalText is the text of Neovim's first terminal buffer, shown or
// not.
func (d *nvimDriver) terminalText(t *testing.T) string {
	s, _ := d.lua(t, `
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.bo[b].buftype == 'terminal' then return vim.json.encode(table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')) end
end
return '""'`).(string)
	return s
}

func (d *nvimDriver) Messages(t *testing.T) string {
	s, _ := d.lua(t, `return vim.json.encode(vim.fn.execute('messages'))`).(string)
	return s
}
