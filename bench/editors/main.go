//go:build linux

// Command editors measures gemkit's Neovim plugin (editors/nvim, with the
// companion it starts) from Claude Code's side, and claudecode.nvim beside
// it in the same run when -claudecode names a copy of it (never vendored:
// bring one with git; it runs from that folder). For each plugin, a real
// Neovim runs in a tmux pane (so that it redraws as for a person) and a
// Claude Code stand-in connects to the plugin's WebSocket server as the
// CLI does (the lock file in $CLAUDE_CONFIG_DIR/ide, subprotocol mcp, the
// token header), then times:
//
//   - connect: dial → initialize answered (the WebSocket handshake and
//     the first answer, what the server adds to Claude Code's start);
//   - selection → agent: typing V j in the file → selection_changed with
//     both lines read off the socket (each plugin's debounce included);
//   - openDiff → drawn: the tools/call sent → the first redraw of a window
//     in diff mode (stamped in Neovim by a decoration provider with
//     CLOCK_MONOTONIC, the clock this program stamps with), of b.txt or
//     of the file -file names (main.go: Go's syntax and ftplugin load);
//   - idle RSS: Neovim and its children (gemkit's companion) 3 s after
//     the stand-in connected (before the rounds below);
//   - claude start → dial: the real Claude Code (-claude; by default the
//     one pinned in interop/) started in a second tmux window with the
//     plugin's CLAUDE_CODE_SSE_PORT, as in the editor's terminal, offline
//     (internal/claudetest's home), until its WebSocket connection to the
//     plugin's port shows ESTABLISHED in the kernel's sockets (polled every
//     2 ms). With the connect figure above, that is start → connected;
//   - gemini start → dial: the same for the real Gemini CLI (-gemini; by
//     default the one pinned in interop/, run by node) with the variables
//     the plugin gives Neovim's terminals, until its connection to the
//     companion's MCP port is ESTABLISHED. Only gemkit.nvim serves Gemini
//     CLI; claudecode.nvim's column shows "-".
//
// Figures are p50 (and min) of -n rounds. The machine may be busy: the
// load average is printed with them, and both plugins run in the same run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/nvimrpc"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/editors:", err)
		os.Exit(1)
	}
}

type options struct {
	nvim, gemkit, claudecode, claude, gemini, root, file string
	n, starts                                            int
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("editors", flag.ContinueOnError)
	var o options
	benchenv.NeovimFlags(fs, &o.nvim, &o.gemkit, &o.root)
	fs.StringVar(&o.claudecode, "claudecode", "", "folder of a claudecode.nvim copy to measure beside gemkit")
	fs.StringVar(&o.claude, "claude", "", "Claude Code binary for the start → dial figure (default: the one in interop/; none: skip)")
	fs.StringVar(&o.gemini, "gemini", "", "Gemini CLI's gemini.js for the gemini start → dial figure (default: the one in interop/; none: skip)")
	fs.IntVar(&o.n, "n", 12, "rounds of each timed step")
	fs.StringVar(&o.file, "file", "b.txt", "name of the file the diffs are of; its extension picks the syntax and ftplugin Neovim loads (b.txt: text; main.go: Go's)")
	fs.IntVar(&o.starts, "starts", 5, "starts of the real Claude Code per plugin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := benchenv.NeovimDefaults(&o.nvim, &o.root); err != nil {
		return err
	}
	if o.claude == "" {
		for _, p := range []string{"claude-code/bin/claude.exe", "claude-code-linux-x64/claude"} {
			p = filepath.Join(o.root, "interop", "node_modules", "@anthropic-ai", p)
			if fi, err := os.Stat(p); err == nil && fi.Size() > 1<<20 {
				o.claude = p
				break
			}
		}
	}
	if o.claude == "none" {
		o.claude = ""
	}
	switch o.gemini {
	case "none":
		o.gemini = ""
	case "":
		p := filepath.Join(o.root, "interop", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
		if _, err := os.Stat(p); err == nil {
			o.gemini = p
		}
	}
	work, err := os.MkdirTemp("", "gemkit-bench-editors-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if o.gemkit == "" {
		o.gemkit = filepath.Join(work, "gemkit")
		build := exec.Command("go", "build", "-o", o.gemkit, "./cmd/gemkit")
		build.Dir, build.Env = o.root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build gemkit: %v\n%s", err, b)
		}
	}
	plugins := []plugin{{
		name:   "gemkit.nvim",
		gemini: true,
		setup:  fmt.Sprintf("vim.opt.runtimepath:prepend(%q)\nvim.cmd('runtime plugin/gemkit.lua')\nrequire('gemkit').setup({ cmd = %q })\n", filepath.Join(o.root, "editors", "nvim"), o.gemkit),
		reject: "GemkitReject",
	}}
	if o.claudecode != "" {
		dir, err := filepath.Abs(o.claudecode)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "lua", "claudecode", "init.lua")); err != nil {
			return fmt.Errorf("-claudecode %s: not a claudecode.nvim folder (%w)", o.claudecode, err)
		}
		plugins = append(plugins, plugin{
			name:   "claudecode.nvim",
			setup:  fmt.Sprintf("vim.opt.runtimepath:prepend(%q)\nvim.cmd('runtime plugin/claudecode.lua')\nrequire('claudecode').setup({ log_level = 'warn' })\n", dir),
			reject: "ClaudeCodeDiffDeny",
		})
	}
	version, _ := exec.Command(o.nvim, "--version").Output()
	first, _, _ := strings.Cut(string(version), "\n")
	sessions := make([]*session, 0, len(plugins))
	defer func() {
		for _, s := range sessions {
			s.close()
		}
	}()
	for i, p := range plugins {
		s, err := open(o, p, filepath.Join(work, strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		sessions = append(sessions, s)
	}
	results := make([]result, len(plugins))
	// Claude Code's starts alternate between the plugins, in turns that
	// change order, so that the machine's load falls on both alike. The
	// first turn, which reads the CLI's 200 MB binary into the page cache,
	// is not counted.
	for turn := range o.starts + 1 {
		if o.claude == "" {
			break
		}
		for k := range sessions {
			i := k
			if turn%2 == 1 {
				i = len(sessions) - 1 - k
			}
			d, err := sessions[i].startClaude(o, turn)
			if err != nil {
				return fmt.Errorf("%s: %w", plugins[i].name, err)
			}
			if turn > 0 {
				results[i].start = append(results[i].start, d)
			}
		}
	}
	// Gemini CLI's starts, likewise; the first reads its bundle into the
	// page cache and is not counted.
	for turn := range o.starts + 1 {
		if o.gemini == "" {
			break
		}
		for i, s := range sessions {
			if !plugins[i].gemini {
				continue
			}
			d, err := s.startGemini(o, turn)
			if err != nil {
				return fmt.Errorf("%s: %w", plugins[i].name, err)
			}
			if turn > 0 {
				results[i].geminiStart = append(results[i].geminiStart, d)
			}
		}
	}
	for i, s := range sessions {
		r, err := s.measure(o)
		if err != nil {
			return fmt.Errorf("%s: %w", plugins[i].name, err)
		}
		r.start, r.geminiStart = results[i].start, results[i].geminiStart
		results[i] = r
	}
	load, _ := proc.LoadAverage()
	fmt.Fprintf(out, "%s, %d rounds; load average %s\n", first, o.n, load)
	fmt.Fprintf(out, "%-34s", "")
	for _, p := range plugins {
		fmt.Fprintf(out, " %22s", p.name)
	}
	fmt.Fprintln(out)
	row := func(name string, f func(result) string) {
		fmt.Fprintf(out, "%-34s", name)
		for _, r := range results {
			fmt.Fprintf(out, " %22s", f(r))
		}
		fmt.Fprintln(out)
	}
	if o.claude != "" {
		row("claude start → dial", func(r result) string { return r.start.String() })
	}
	if o.gemini != "" {
		row("gemini start → dial", func(r result) string { return r.geminiStart.String() })
	}
	row("connect: dial → initialize answered", func(r result) string { return r.connect.String() })
	row("selection (V j) → agent", func(r result) string { return r.selection.String() })
	row("openDiff → diff drawn", func(r result) string { return r.diff.String() })
	row("idle RSS, Neovim + companion", func(r result) string {
		return fmt.Sprintf("%.1f + %.1f MB", mb(r.rssEditor), mb(r.rssCompanion))
	})
	row("  the companion's RssAnon", func(r result) string { return fmt.Sprintf("%.1f MB", mb(r.anonCompanion)) })
	return nil
}

type plugin struct {
	name, setup, reject string
	gemini              bool // it serves Gemini CLI too
}

type result struct {
	start, geminiStart, connect, selection, diff stat
	rssEditor, rssCompanion, anonCompanion       int64
}

// stat is the p50 and min of a step's rounds.
type stat []time.Duration

func (s stat) String() string {
	if len(s) == 0 {
		return "-"
	}
	v := slices.Clone(s)
	slices.Sort(v)
	return fmt.Sprintf("%.1f ms (min %.1f)", ms(v[len(v)/2]), ms(v[0]))
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// monotonic is CLOCK_MONOTONIC, the clock of Neovim's vim.uv.hrtime().
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// drawnLua stamps the first redraw of a window in diff mode after
// _G.bench_drawn is reset to false.
const drawnLua = `
_G.bench_drawn = false
local hrtime = (vim.uv or vim.loop).hrtime
vim.api.nvim_set_decoration_provider(vim.api.nvim_create_namespace('bench'), {
  on_win = function(_, win)
    if _G.bench_drawn == false and vim.wo[win].diff then
      _G.bench_drawn = hrtime()
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
	s.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "TERM=xterm-256color", "LANG=C.UTF-8",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
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

// close quits Neovim and ends its tmux server.
func (s *session) close() {
	if s.nv != nil {
		_, _ = s.nv.Call("nvim_command", "qa!")
		s.nv.Close()
	}
	_ = exec.Command("tmux", "-S", s.tsock, "kill-server").Run()
}

// startClaude times one start of the real Claude Code against s.
func (s *session) startClaude(o options, i int) (time.Duration, error) {
	return startAgent(s.tsock, s.ws, append(append(slices.Clone(s.env), s.claudeEnv...), "CLAUDE_CODE_SSE_PORT="+s.port), []string{o.claude}, s.port, "claude"+strconv.Itoa(i))
}

// geminiSettings is what the real Gemini CLI needs to start offline with
// IDE mode on and no first-run question.
const geminiSettings = `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
 "ide": {"enabled": true, "hasSeenNudge": true}}`

// startGemini times one start of the real Gemini CLI in a terminal of
// s's Neovim (the variables the plugin gives its terminals) until it dials
// the companion.
func (s *session) startGemini(o options, i int) (time.Duration, error) {
	env := slices.Clone(s.env)
	var port string
	for _, k := range []string{ide.EnvServerPort, ide.EnvAuthToken, ide.EnvPID, ide.EnvWorkspacePath} {
		v, err := s.nv.Call("nvim_exec_lua", "return vim.env["+strconv.Quote(k)+"] or ''", []any{})
		if err != nil {
			return 0, err
		}
		env = append(env, k+"="+v.(string))
		if k == ide.EnvServerPort {
			port = v.(string)
		}
	}
	if port == "" {
		return 0, errors.New("the plugin gave Neovim no " + ide.EnvServerPort)
	}
	if err := os.MkdirAll(filepath.Join(s.home, ".gemini"), 0o700); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(s.home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		return 0, err
	}
	env = append(env, "GEMINI_API_KEY=x", "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9",
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22") // not "in a container" even where /.dockerenv exists
	node, err := exec.LookPath("node")
	if err != nil {
		return 0, err
	}
	return startAgent(s.tsock, s.ws, env, []string{node, o.gemini}, port, "gemini"+strconv.Itoa(i))
}

// measure runs the stand-in's steps against s.
func (s *session) measure(o options) (result, error) {
	var r result
	nv, file, lock, pid, p := s.nv, s.file, s.lock, s.pid, s.p
	ctx := context.Background()
	c, err := dial(ctx, lock)
	if err != nil {
		return r, err
	}
	defer c.close()
	time.Sleep(3 * time.Second)
	r.rssEditor, r.rssCompanion, r.anonCompanion = rssTree(pid)

	for range o.n {
		t0 := time.Now()
		c2, err := dial(ctx, lock)
		if err != nil {
			return r, err
		}
		r.connect = append(r.connect, time.Since(t0))
		c2.close()
	}

	input := func(keys string) error { _, err := nv.Call("nvim_input", keys); return err }
	for range o.n {
		if err := input("<Esc>gg0"); err != nil {
			return r, err
		}
		time.Sleep(250 * time.Millisecond) // the selection cleared, past both plugins' debounce
		c.drain()
		t0 := time.Now()
		if err := input("Vj"); err != nil {
			return r, err
		}
		if err := c.waitSelection(ctx, func(text string) bool { return strings.HasPrefix(text, "one\ntwo") }, 5*time.Second); err != nil {
			return r, fmt.Errorf("V j → selection_changed: %w", err)
		}
		r.selection = append(r.selection, time.Since(t0))
	}
	if err := input("<Esc>"); err != nil {
		return r, err
	}

	for i := range o.n {
		if _, err := nv.Call("nvim_exec_lua", "_G.bench_drawn = false", []any{}); err != nil {
			return r, err
		}
		t0 := monotonic()
		call, err := c.call(ctx, "tools/call", map[string]any{"name": "openDiff", "arguments": map[string]any{
			"old_file_path": file, "new_file_path": file, "new_file_contents": "one\nTWO\nthree\n", "tab_name": "bench " + strconv.Itoa(i)}})
		if err != nil {
			return r, err
		}
		var drawn int64
		if err := benchenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
			v, err := nv.Call("nvim_exec_lua", "return _G.bench_drawn", []any{})
			if err != nil {
				return err
			}
			n, ok := v.(int64)
			if !ok {
				return errors.New("no diff drawn")
			}
			drawn = n
			return nil
		}); err != nil {
			return r, fmt.Errorf("openDiff: %w", err)
		}
		r.diff = append(r.diff, time.Duration(drawn)-t0)

		if _, err := nv.Call("nvim_command", p.reject); err != nil {
			return r, fmt.Errorf(":%s: %w", p.reject, err)
		}
		select {
		case <-call:
		case <-time.After(10 * time.Second):
			return r, errors.New("openDiff did not answer after :" + p.reject)
		}
		time.Sleep(100 * time.Millisecond) // the view closes
	}
	return r, nil
}

// startAgent starts an agent's argv in a new tmux window and times it
// until it has a connection to port; then it ends it.
func startAgent(tsock, ws string, env []string, argv []string, port string, name string) (time.Duration, error) {
	args := append([]string{"-S", tsock, "new-window", "-d", "-n", name, "-c", ws, "env", "-i"}, env...)
	args = append(args, argv...)
	p, _ := strconv.Atoi(port)
	t0 := time.Now()
	if b, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("tmux new-window: %v %s", err, b)
	}
	defer func() {
		_ = exec.Command("tmux", "-S", tsock, "kill-window", "-t", name).Run()
		_ = benchenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
			if established(p) {
				return errors.New(name + " still connected")
			}
			return nil
		})
		time.Sleep(200 * time.Millisecond)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !established(p) {
		if time.Now().After(deadline) {
			return 0, errors.New(name + " did not connect to port " + port + " within 30 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(t0), nil
}

// established tells whether a TCP connection to 127.0.0.1:port is
// ESTABLISHED.
func established(port int) bool {
	socks, err := proc.TCPSockets(proc.Query{States: 1 << proc.TCPEstablished, RemotePort: uint16(port)})
	if err != nil {
		return false
	}
	for _, s := range socks {
		if s.Remote.Addr() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			return true
		}
	}
	return false
}

// rssTree is the VmRSS of pid and, apart, of its child processes, with
// their RssAnon (what is not the executable's pages).
func rssTree(pid int) (self, children, childrenAnon int64) {
	self, _ = proc.StatusBytes(pid, "VmRSS")
	kids, _ := proc.Children(pid)
	for _, c := range kids {
		rss, _ := proc.StatusBytes(c, "VmRSS")
		anon, _ := proc.StatusBytes(c, "RssAnon")
		children += rss
		childrenAnon += anon
	}
	return self, children, childrenAnon
}

// stand is the Claude Code stand-in: what the CLI sends to connect (its
// ws-ide transport: a WebSocket with subprotocol mcp and the lock file's
// token in X-Claude-Code-Ide-Authorization; initialize, then
// notifications/initialized and ide_connected), then requests and the
// selection_changed notifications read off the socket.
type stand struct {
	c       *websocket.Conn
	mu      sync.Mutex
	next    int
	pending map[int]chan json.RawMessage
	sel     chan string
}

func dial(ctx context.Context, lockPath string) (*stand, error) {
	data, err := os.ReadFile(lockPath)
	if err != nil {
		return nil, err
	}
	var lock struct {
		AuthToken string `json:"authToken"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", lockPath, err)
	}
	port := strings.TrimSuffix(filepath.Base(lockPath), ".lock")
	c, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port, &websocket.DialOptions{
		Subprotocols: []string{"mcp"},
		HTTPHeader:   http.Header{"X-Claude-Code-Ide-Authorization": {lock.AuthToken}},
	})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	s := &stand{c: c, pending: map[int]chan json.RawMessage{}, sel: make(chan string, 256)}
	init, err := s.call(ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "2.1.330"}})
	if err != nil {
		return nil, err
	}
	select {
	case <-init:
	case <-time.After(10 * time.Second):
		return nil, errors.New("initialize not answered")
	}
	if err := s.send(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	if err := s.send(ctx, map[string]any{"jsonrpc": "2.0", "method": "ide_connected", "params": map[string]any{"pid": os.Getpid()}}); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stand) send(ctx context.Context, v any) error {
	b, _ := json.Marshal(v)
	return s.c.Write(ctx, websocket.MessageText, b)
}

// call sends a request; the channel gets its answer. The first call
// starts the reader.
func (s *stand) call(ctx context.Context, method string, params any) (<-chan json.RawMessage, error) {
	s.mu.Lock()
	s.next++
	id := s.next
	ch := make(chan json.RawMessage, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	if id == 1 {
		go s.read()
	}
	return ch, s.send(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

func (s *stand) read() {
	for {
		_, b, err := s.c.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch {
		case m.ID != nil && m.Method == "":
			s.mu.Lock()
			ch := s.pending[*m.ID]
			delete(s.pending, *m.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- m.Result
			}
		case m.Method == "selection_changed":
			var p struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Params, &p)
			select {
			case s.sel <- p.Text:
			default:
			}
		}
	}
}

// drain forgets the selections read so far.
func (s *stand) drain() {
	for {
		select {
		case <-s.sel:
		default:
			return
		}
	}
}

func (s *stand) waitSelection(ctx context.Context, ok func(string) bool, d time.Duration) error {
	timeout := time.After(d)
	for {
		select {
		case text := <-s.sel:
			if ok(text) {
				return nil
			}
		case <-timeout:
			return errors.New("timed out")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *stand) close() { s.c.Close(websocket.StatusNormalClosure, "") }
