package editors_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestVim runs the real Vim in a tmux pane (Vim's autocommands run from
// its input loop, which wants a terminal) with editors/vim on its
// runtimepath. The test types keys into the pane as a person would and
// reads Vim's state over a JSON channel that the test vimrc opens to the
// test.
func TestVim(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "vim", "vim-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	h := newHarness(t)
	d := startVim(t, h, bin, tmux, gemkittest.Gemkit(t))
	runScenario(t, h, d, editorInfo{name: "vim", displayName: "Vim"})
}

// vimTestRC loads the plugin and gives the test read access to Vim.
const vimTestRC = `set nocompatible
let &runtimepath = %q . ',' . &runtimepath
let g:gemkit_cmd = %q
let g:gemkit_args = ['-v']
set ttimeoutlen=10 hidden
let g:test_channel = ch_open('127.0.0.1:%d', {'mode': 'json', 'waittime': 5000})

function! GemkitTestText(buf) abort
  return join(getbufline(a:buf, 1, '$'), "\n") . (getbufvar(a:buf, '&endofline') ? "\n" : '')
endfunction

function! GemkitTestDiff(path) abort
  let d = get(gemkit#state().diffs, a:path, {})
  if empty(d)
    return v:null
  endif
  let n = 0
  for w in range(1, winnr('$'))
    let b = winbufnr(w)
    if (b == d.left || b == d.right) && getwinvar(w, '&diff')
      let n += 1
    endif
  endfor
  return {'left': GemkitTestText(d.left), 'right': GemkitTestText(d.right),
        \ 'visible': d.tab == tabpagenr() && n == 2 ? v:true : v:false, 'rightwin': bufwinid(d.right)}
endfunction

function! GemkitTestBufferText(path) abort
  let b = bufnr(fnameescape(a:path))
  return b > 0 && bufloaded(b) ? GemkitTestText(b) : ''
endfunction
`

type vimDriver struct {
	*tmuxPane
	ch     *vimChannel
	pid    int
	exited <-chan struct{}
}

func startVim(t *testing.T, h *harness, vimBin, tmuxBin, gemkit string) *vimDriver {
	plugin, err := filepath.Abs("vim")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc := filepath.Join(h.home, "vimrc")
	port := ln.Addr().(*net.TCPAddr).Port
	if err := os.WriteFile(rc, []byte(fmt.Sprintf(vimTestRC, plugin, gemkit, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &vimDriver{tmuxPane: startTmux(t, h, tmuxBin, "vim", vimBin, "-N", "-u", rc, "-i", "NONE", "-n")}

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
	var pid int
	if err := json.Unmarshal(d.eval(t, "getpid()"), &pid); err != nil {
		t.Fatal(err)
	}
	d.pid, d.exited = pid, watchExit(pid)
	return d
}

// vimChannel sends Vim "expr" commands over a channel in json mode.
type vimChannel struct {
	mu   sync.Mutex
	conn net.Conn
	dec  *json.Decoder
	next int
}

func (c *vimChannel) eval(expr string) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := -c.next
	msg, _ := json.Marshal([]any{"expr", expr, id})
	_ = c.conn.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := c.conn.Write(msg); err != nil {
		return nil, err
	}
	for {
		var reply []json.RawMessage
		if err := c.dec.Decode(&reply); err != nil {
			return nil, err
		}
		if len(reply) == 2 && string(reply[0]) == strconv.Itoa(id) {
			if string(reply[1]) == `"ERROR"` {
				return nil, errors.New("vim could not evaluate " + expr)
			}
			return reply[1], nil
		}
	}
}

func (d *vimDriver) eval(t *testing.T, expr string) json.RawMessage {
	t.Helper()
	v, err := d.ch.eval(expr)
	if err != nil {
		t.Fatalf("vim: %v", err)
	}
	return v
}

func (d *vimDriver) evalString(t *testing.T, expr string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(d.eval(t, expr), &s); err != nil {
		t.Fatalf("vim %s: %v", expr, err)
	}
	return s
}

func (d *vimDriver) ex(t *testing.T, cmd string) { d.keys(t, ":"+cmd, "Enter") }

// vimString quotes s for a Vim expression.
func vimString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (d *vimDriver) waitMode(t *testing.T, mode string) {
	t.Helper()
	waitFor(t, "vim in mode "+mode, func() bool { return d.evalString(t, "mode()") == mode })
}

func (d *vimDriver) PID() int                { return d.pid }
func (d *vimDriver) Exited() <-chan struct{} { return d.exited }

func (d *vimDriver) Open(t *testing.T, path string, line, col int) {
	d.ex(t, "edit "+escapeEx(path))
	d.keys(t, fmt.Sprintf("%dG%d|", line, col))
}

func (d *vimDriver) SelectLines(t *testing.T, from, to int) {
	d.keys(t, fmt.Sprintf("%dGV%s", from, strings.Repeat("j", to-from)))
	d.waitMode(t, "V")
}

func (d *vimDriver) Unselect(t *testing.T) {
	d.keys(t, "", "Escape")
	d.waitMode(t, "n")
}

func (d *vimDriver) OpenTerminal(t *testing.T) {
	d.ex(t, "rightbelow vertical terminal")
	waitFor(t, "the terminal's window focused", func() bool { return d.evalString(t, "&buftype") == "terminal" })
	d.keys(t, "", "C-w", "p")
	waitFor(t, "the file's window focused", func() bool { return d.evalString(t, "&buftype") == "" })
}

func (d *vimDriver) ToTerminal(t *testing.T) {
	d.keys(t, "", "C-w", "l")
	waitFor(t, "the terminal's window focused", func() bool { return d.evalString(t, "&buftype") == "terminal" })
}

func (d *vimDriver) FromTerminal(t *testing.T) {
	d.keys(t, "", "C-w", "h")
	waitFor(t, "the file's window focused", func() bool { return d.evalString(t, "&buftype") == "" })
}

func (d *vimDriver) Diff(t *testing.T, path string) (diffView, bool) {
	var v *struct {
		Left, Right string
		Visible     bool
	}
	if err := json.Unmarshal(d.eval(t, "GemkitTestDiff("+vimString(path)+")"), &v); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return diffView{}, false
	}
	return diffView{Left: v.Left, Right: v.Right, Visible: v.Visible}, true
}

func (d *vimDriver) AppendRight(t *testing.T, path, line string) {
	d.eval(t, "win_gotoid(GemkitTestDiff("+vimString(path)+").rightwin)")
	d.keys(t, "Go"+line, "Escape")
	d.waitMode(t, "n")
	waitFor(t, "the edit in the proposal", func() bool {
		v, ok := d.Diff(t, path)
		return ok && strings.Contains(v.Right, line)
	})
}

func (d *vimDriver) Hint(t *testing.T, path string) string {
	d.eval(t, "win_gotoid(GemkitTestDiff("+vimString(path)+").rightwin)")
	return d.evalString(t, "&l:statusline")
}

func (d *vimDriver) WriteQuit(t *testing.T, path string) {
	d.eval(t, "win_gotoid(GemkitTestDiff("+vimString(path)+").rightwin)")
	d.ex(t, "wq")
}

func (d *vimDriver) Accept(t *testing.T, _ string)    { d.ex(t, "GemkitAccept") }
func (d *vimDriver) Reject(t *testing.T, _ string)    { d.ex(t, "GemkitReject") }
func (d *vimDriver) CloseView(t *testing.T, _ string) { d.ex(t, "tabclose") }

func (d *vimDriver) BufferText(t *testing.T, path string) string {
	return d.evalString(t, "GemkitTestBufferText("+vimString(path)+")")
}

func (d *vimDriver) SaveAs(t *testing.T, newPath string) { d.ex(t, "saveas "+escapeEx(newPath)) }

func (d *vimDriver) CloseFile(t *testing.T, path string) { d.ex(t, "bdelete "+escapeEx(path)) }

func (d *vimDriver) Cd(t *testing.T, dir string) { d.ex(t, "cd "+escapeEx(dir)) }

func (d *vimDriver) Getenv(t *testing.T, name string) string {
	return d.evalString(t, "$"+name)
}

func (d *vimDriver) Quit(t *testing.T) { d.ex(t, "qa!") }

func (d *vimDriver) Find(t *testing.T, path, needle string) {
	d.ex(t, "edit "+escapeEx(path))
	d.keys(t, "gg0/\\V"+strings.ReplaceAll(needle, `\`, `\\`), "Enter")
}

func (d *vimDriver) SelectText(t *testing.T, needle string) {
	keys := "v"
	if n := utf8.RuneCountInString(needle) - 1; n > 0 {
		keys += strconv.Itoa(n) + "l"
	}
	d.keys(t, keys)
	d.waitMode(t, "v")
}

func (d *vimDriver) SelectAll(t *testing.T) {
	d.keys(t, "ggVG")
	d.waitMode(t, "V")
}

func (d *vimDriver) OpenPrompt(t *testing.T) {
	d.keys(t, ":")
	d.waitMode(t, "c")
}

func (d *vimDriver) ClosePrompt(t *testing.T) { d.keys(t, "", "Escape") }

func (d *vimDriver) Messages(t *testing.T) string { return d.evalString(t, "execute('messages')") }
