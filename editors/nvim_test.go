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
// runtimepath, driven over its msgpack-RPC socket.
func TestNeovim(t *testing.T) {
	bin := requireEditor(t, "nvim", "neovim")
	h := newHarness(t)
	d := startNvim(t, h, bin, gemkittest.Gemkit(t))
	runScenario(t, h, d, editorInfo{name: "neovim", displayName: "Neovim"})
}

type nvimDriver struct {
	rpc    *nvimRPC
	pid    int
	exited <-chan struct{}
}

func startNvim(t *testing.T, h *harness, bin, gemkit string) *nvimDriver {
	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(h.home, "init.lua")
	initLua := fmt.Sprintf(`vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q, args = { '-v' } })
`, plugin, gemkit)
	if err := os.WriteFile(init, []byte(initLua), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.tmp, "nvim.sock")
	cmd := exec.Command(bin, "--headless", "--listen", sock, "-n", "-i", "NONE", "-u", init)
	cmd.Dir = h.ws
	cmd.Env = h.env()
	exited := startProcess(t, cmd)
	var rpc *nvimRPC
	waitFor(t, "nvim's RPC socket", func() bool {
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

// nvimDiffLua describes the diff view of a path as JSON.
const nvimDiffLua = `
local path = ...
local d = require('gemkit').state().diffs[path]
if not d then return 'null' end
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
	d.lua(t, `
local d = require('gemkit').state().diffs[...]
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(d.tab)) do
  if vim.api.nvim_win_get_buf(w) == d.right then vim.api.nvim_set_current_win(w) end
end`, path)
	d.command(t, "normal! Go"+line)
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
	waitFor(t, "nvim's command line", func() bool {
		m, _ := d.rpc.call("nvim_get_mode")
		mm, _ := m.(map[string]any)
		return mm["mode"] == "c"
	})
}

func (d *nvimDriver) ClosePrompt(t *testing.T) { d.input(t, "<Esc>") }

func (d *nvimDriver) Messages(t *testing.T) string {
	s, _ := d.lua(t, `return vim.json.encode(vim.fn.execute('messages'))`).(string)
	return s
}
