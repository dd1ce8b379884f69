//go:build linux

package main

// A plugin's Neovim in a tmux server of its own.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/nvimrpc"
)

// monotonic is CLOCK_MONOTONIC, the clock of Neovim's vim.uv.hrtime().
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// drawnLua stamps the first redraw of a window in diff mode after
// _G.bench_drawn is reset to false, and in _G.bench_highlighted the first
// redraw of one when every window in diff mode in its tab has its syntax
// set (a plugin may load the language's files after the first draw).
const drawnLua = `
_G.bench_drawn, _G.bench_highlighted = false, false
local api, hrtime = vim.api, (vim.uv or vim.loop).hrtime
api.nvim_set_decoration_provider(api.nvim_create_namespace('bench'), {
  on_win = function(_, win)
    if not vim.wo[win].diff then
      return false
    end
    local now = hrtime()
    if _G.bench_drawn == false then
      _G.bench_drawn = now
    end
    if _G.bench_highlighted == false then
      for _, w in ipairs(api.nvim_tabpage_list_wins(api.nvim_win_get_tabpage(win))) do
        if vim.wo[w].diff and vim.bo[api.nvim_win_get_buf(w)].syntax == '' then
          return false
        end
      end
      _G.bench_highlighted = now
    end
    return false
  end,
})
`

// session is one plugin's Neovim, running in its own tmux server.
type session struct {
	p                          plugin
	file, lock, port, ws, home string
	tsock                      string
	env, claudeEnv             []string
	nv                         *nvimrpc.Client
	c                          *stand // the stand-in of the timed steps, once connected
	pid                        int
}

// open starts Neovim with plugin p in dir and waits for its lock file.
func open(o options, p plugin, dir string) (*session, error) {
	s := &session{p: p}
	home, ws, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "ws"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, ws, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	s.ws, s.file, s.home = ws, filepath.Join(ws, filepath.Base(o.file)), home
	if err := os.WriteFile(s.file, []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		return nil, err
	}
	if o.claude != "" {
		e, err := claudetest.Prepare(home, "http://127.0.0.1:9", 9, ws)
		if err != nil {
			return nil, err
		}
		s.claudeEnv = e
	}
	init := filepath.Join(home, "init.lua")
	if err := os.WriteFile(init, []byte(drawnLua+p.setup), 0o600); err != nil {
		return nil, err
	}
	lockDir := filepath.Join(home, ".claude", "ide")
	s.env = neovimEnv(home, tmp)
	sock := filepath.Join(tmp, "nvim.sock")
	s.tsock = filepath.Join(tmp, "tmux.sock")
	args := append([]string{"-S", s.tsock, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-c", ws, "env", "-i"}, s.env...)
	args = append(args, o.nvim, "--listen", sock, "-n", "-i", "NONE", "-u", init, s.file)
	if b, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tmux: %v %s", err, b)
	}
	if err := benchenv.Poll(10*time.Second, 5*time.Millisecond, func() (err error) { s.nv, err = nvimrpc.Dial(sock); return err }); err != nil {
		s.close()
		return nil, fmt.Errorf("neovim's socket: %w", err)
	}
	pidv, err := s.nv.Call("nvim_exec_lua", "return vim.fn.getpid()", []any{})
	if err != nil {
		s.close()
		return nil, err
	}
	s.pid = int(pidv.(int64))
	if err := benchenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
		m, _ := filepath.Glob(filepath.Join(lockDir, "*.lock"))
		if len(m) == 0 {
			return errors.New("no lock file in " + lockDir)
		}
		s.lock = m[0]
		return nil
	}); err != nil {
		s.close()
		return nil, err
	}
	s.port = strings.TrimSuffix(filepath.Base(s.lock), ".lock")
	return s, nil
}

// neovimEnv is the whole environment of a plugin's Neovim with home and
// tmp as its home and temporary folders.
func neovimEnv(home, tmp string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "TERM=xterm-256color", "LANG=C.UTF-8",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
}

// close quits Neovim and ends its tmux server.
func (s *session) close() {
	if s.c != nil {
		s.c.close()
	}
	if s.nv != nil {
		_, _ = s.nv.Call("nvim_command", "qa!")
		s.nv.Close()
	}
	_ = exec.Command("tmux", "-S", s.tsock, "kill-server").Run()
}
