//go:build linux

package main

// The real agents' starts: Claude Code's and Gemini CLI's, each in a
// window of the plugin's tmux server.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/proc"
)

// claudeStart is one start of the real Claude Code against a plugin.
type claudeStart struct {
	// dial: until its connection to the plugin's port is ESTABLISHED;
	// connected: until it counts itself connected to the IDE by its own
	// account (its debug log's line for the MCP server "ide", stamped with
	// its wall clock, which this program's time.Now reads too); took: the
	// connect's own time as that line gives it (from its start of the
	// connection).
	dial, connected, took time.Duration
	// launched: from the start to its log's first line (tmux's new window,
	// the exec of its 380 MB binary, its runtime's start); mounted: from
	// then to its interface mounted ([REPL:mount]), its own start, before
	// it looks for an IDE at all; search: from then to its start of the
	// IDE's connection, where it reads the lock files (and waits on its own
	// other start-up work). launched + mounted + search + took is connected.
	launched, mounted, search time.Duration
	// cpu is the CPU time the editor's side (Neovim, its TUI process where
	// it has one, and their children: gemkit's companion) spent from the
	// start until the CLI was seen connected: what the plugin took from
	// the two cores while Claude Code started.
	cpu time.Duration
}

// startClaude times one start of the real Claude Code against s.
func (s *session) startClaude(o options, i int) (c claudeStart, err error) {
	log := filepath.Join(s.home, "claude-debug-"+strconv.Itoa(i)+".txt")
	env := append(append(slices.Clone(s.env), s.claudeEnv...), "CLAUDE_CODE_SSE_PORT="+s.port)
	cpu0 := s.editorCPU()
	c.dial, c.connected, err = startAgent(s.tsock, s.ws, env, []string{o.claude, "--debug-file", log}, s.port, "claude"+strconv.Itoa(i),
		func() (at time.Time, ok bool) {
			at, c.took, ok = claudeConnected(log)
			if ok {
				c.cpu = s.editorCPU() - cpu0
			}
			return at, ok
		})
	if err == nil {
		var first time.Time
		var ok bool
		if first, c.mounted, c.search, ok = claudePhases(log); ok {
			if at, _, found := claudeConnected(log); found {
				// at is c.connected after the start: the first line came
				// c.connected − (at − first) after it.
				c.launched = c.connected - at.Sub(first)
			}
		}
	}
	return c, err
}

// editorCPU is the CPU time of Neovim, of its parent when that is
// Neovim's TUI (0.10 runs the editor as the TUI's child), and of Neovim's
// children.
func (s *session) editorCPU() time.Duration {
	pids := []int{s.pid}
	if pp, err := proc.Parent(s.pid); err == nil {
		if st, err := proc.ReadStat(pp); err == nil && strings.HasPrefix(st.Comm, "nvim") {
			pids = append(pids, pp)
		}
	}
	kids, _ := proc.Children(s.pid)
	var total time.Duration
	for _, p := range append(pids, kids...) {
		d, _ := proc.CPUTime(p)
		total += d
	}
	return total
}

// claudeConnected reads Claude Code's "connected" line for its IDE in its
// debug log: its time (lines start with an RFC 3339 time) and the
// connect's time it gives. In 2.1.330 the line reads `MCP server "ide":
// Successfully connected (transport: ws-ide) in 97ms`.
func claudeConnected(log string) (at time.Time, took time.Duration, ok bool) {
	b, err := os.ReadFile(log)
	if err != nil {
		return at, 0, false
	}
	for line := range strings.Lines(string(b)) {
		_, rest, found := strings.Cut(line, `MCP server "ide": Successfully connected`)
		if !found {
			continue
		}
		stamp, _, _ := strings.Cut(line, " ")
		at, err = time.Parse(time.RFC3339Nano, stamp)
		if _, n, found := strings.Cut(rest, ") in "); found {
			took, _ = time.ParseDuration(strings.TrimSpace(n))
		}
		return at, took, err == nil
	}
	return at, 0, false
}

// claudePhases reads, in Claude Code's debug log, the time of its first
// line, the times from then to its interface mounted (`[REPL:mount] REPL
// mounted`, after which 2.1.330 looks for an IDE) and from then to its
// start of the IDE's connection (`MCP server "ide": Starting connection`).
func claudePhases(log string) (first time.Time, mounted, search time.Duration, ok bool) {
	b, err := os.ReadFile(log)
	if err != nil {
		return first, 0, 0, false
	}
	var mount, start time.Time
	for line := range strings.Lines(string(b)) {
		stamp, rest, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			continue
		}
		switch {
		case first.IsZero():
			first = at
		case mount.IsZero() && strings.Contains(rest, "[REPL:mount]"):
			mount = at
		case !mount.IsZero() && strings.Contains(rest, `MCP server "ide": Starting connection`):
			start = at
		}
		if !start.IsZero() {
			return first, mount.Sub(first), start.Sub(mount), true
		}
	}
	return first, 0, 0, false
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
	d, _, err := startAgent(s.tsock, s.ws, env, []string{node, o.gemini}, port, "gemini"+strconv.Itoa(i), nil)
	return d, err
}

// startAgent starts an agent's argv in a new tmux window and times it
// until it has a connection to port and, when connected is not nil, until
// connected reports the time the agent counts itself connected; then it
// ends it.
func startAgent(tsock, ws string, env []string, argv []string, port string, name string, connected func() (time.Time, bool)) (dial, conn time.Duration, err error) {
	args := append([]string{"-S", tsock, "new-window", "-d", "-n", name, "-c", ws, "env", "-i"}, env...)
	args = append(args, argv...)
	p, _ := strconv.Atoi(port)
	t0 := time.Now()
	if b, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("tmux new-window: %v %s", err, b)
	}
	defer func() {
		_ = exec.Command("tmux", "-S", tsock, "kill-window", "-t", name).Run()
		_ = benchenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
			if established(p) {
				return errors.New(name + " still connected")
			}
			return nil
		})
		time.Sleep(200 * time.Millisecond) // the agent's exit settles before the next start
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !established(p) {
		if time.Now().After(deadline) {
			screen, _ := exec.Command("tmux", "-S", tsock, "capture-pane", "-p", "-t", name).Output()
			return 0, 0, fmt.Errorf("%s did not connect to port %s within 30 s; its window shows:\n%s", name, port, strings.TrimSpace(string(screen)))
		}
		time.Sleep(2 * time.Millisecond)
	}
	dial = time.Since(t0)
	if connected == nil {
		return dial, 0, nil
	}
	var at time.Time
	if err := benchenv.Poll(30*time.Second, 5*time.Millisecond, func() error {
		t, ok := connected()
		if !ok {
			return errors.New(name + " did not say it connected to the IDE")
		}
		at = t
		return nil
	}); err != nil {
		return 0, 0, err
	}
	return dial, at.Sub(t0), nil
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
