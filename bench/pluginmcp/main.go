//go:build linux

// Command pluginmcp measures what switching a Claude Code plugin to
// gemkit's sandbox costs its stdio MCP server, side by side in one run:
//
//   - bare: the plugin's server (a small node script, as plugins ship
//     theirs) started the way the real Claude Code 2.1.330 starts it:
//     its command and arguments as .mcp.json gives them with
//     ${CLAUDE_PLUGIN_ROOT} expanded, in Claude Code's working folder,
//     with the environment Claude Code gives it. None of that is
//     assumed: the bench has Claude Code itself start the server once
//     (`claude mcp list`, which connects to every server) and the
//     server writes down its argv, folder and environment;
//   - switched: the same plugin after `gemkit plugins sandbox P@M` in
//     the bench's home, reached as Claude Code reaches its twin: the
//     command of the twin plugin's .mcp.json (`gemkit mcp --home TH
//     --only X`), with the same environment but for the twin's
//     CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA. Before measuring, the
//     bench has Claude Code list its servers again: the twin's server
//     connected, the plugin's own gone.
//
// Each round starts every side once, in a seeded shuffled order, and
// times from the spawn to initialize answered, to the first tools/list
// answered (what Claude Code waits for before a session has the tools),
// and to the first tools/call answered (the server surely started);
// beside each start, the CPU time of its process tree (wait4's). Then
// n calls of each over one warm session each, interleaved, with the
// CPU the side's process tree spent a call. It prints p50 and p90 of
// each, and the costs paired by round: the median of the rounds'
// differences with its 95% range (the sign test's).
//
//	go run ./bench/pluginmcp [-n 300] [-starts 40] [-seed N] [-gemkit BIN]
//
// The client is bench/internal/mcpline, the same for both sides.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 300, "warm calls of each side")
	flag.IntVar(&o.starts, "starts", 40, "cold starts of each side (rounds)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the rounds' order (0: from the clock)")
	flag.StringVar(&o.gemkit, "gemkit", "", "gemkit binary (default: built from the repository as it ships)")
	flag.Parse()
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "pluginmcp:", err)
		os.Exit(1)
	}
}

type options struct {
	n, starts int
	seed      uint64
	gemkit    string
}

// side is one way to reach the plugin's server.
type side struct {
	name, tool string
	cmd        func() *exec.Cmd
}

func run(o options) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	claude, err := benchenv.ClaudeCode(root)
	if err != nil {
		return err
	}
	tmp, bin, err := benchenv.ScratchOr("gemkit-bench-pluginmcp-", o.gemkit)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	h := newHome(tmp, claude, bin)
	bare, err := h.installBare()
	if err != nil {
		return err
	}
	switched, err := h.switchTwin(bare)
	if err != nil {
		return err
	}
	sides := []side{switched, bare}
	fmt.Printf("%s/%s, %d CPUs; %d cold starts and %d calls of each side, in rounds of one of each in a shuffled order (seed %d)\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.starts, o.n, o.seed)
	fmt.Printf("load average before: %s\n", loadavg())
	order := rand.New(rand.NewPCG(o.seed, 0))
	var r results
	if err := r.coldStarts(sides, o.starts, order); err != nil {
		return err
	}
	if err := r.warmCalls(sides, o.n, order); err != nil {
		return err
	}
	fmt.Printf("load average after:  %s\n", loadavg())
	r.print(sides)
	return nil
}

// results holds each side's measures, by side and then by round.
type results struct {
	initialized, listed, called, startCPU [][]time.Duration
	warm                                  [][]time.Duration
	cpuPerCall                            []time.Duration
}

// coldStarts starts each side once a round, starts rounds, each round
// in an order of its own: no side always follows the same other one,
// whose exit may leave the machine busier or its caches warmer.
func (r *results) coldStarts(sides []side, starts int, order *rand.Rand) error {
	for _, p := range []*[][]time.Duration{&r.initialized, &r.listed, &r.called, &r.startCPU} {
		*p = make([][]time.Duration, len(sides))
	}
	for range starts {
		for _, i := range order.Perm(len(sides)) {
			c, err := coldStart(sides[i])
			if err != nil {
				return fmt.Errorf("%s: cold start: %w", sides[i].name, err)
			}
			r.initialized[i] = append(r.initialized[i], c.initialized)
			r.listed[i] = append(r.listed[i], c.listed)
			r.called[i] = append(r.called[i], c.called)
			r.startCPU[i] = append(r.startCPU[i], c.cpu)
		}
	}
	return nil
}

// cold is one cold start's times from the spawn, and its process
// tree's CPU time to its exit.
type cold struct{ initialized, listed, called, cpu time.Duration }

// coldStart starts s, times initialize, tools/list (which must hold
// s's tool) and a first call of the tool, then closes the session as a
// client does and takes the CPU time of the side's process and all it
// waited for (wait4).
func coldStart(s side) (c cold, err error) {
	start := time.Now()
	conn, err := dial(s)
	if err != nil {
		return c, err
	}
	c.initialized = conn.Read.Sub(start)
	defer func() {
		conn.Close()
		if ru, ok := conn.Cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}()
	raw, err := conn.Request("tools/list", map[string]any{})
	if err != nil {
		return c, err
	}
	c.listed = conn.Read.Sub(start)
	if !strings.Contains(string(raw), `"`+s.tool+`"`) {
		return c, fmt.Errorf("tools/list lacks %s: %s", s.tool, raw)
	}
	text, isErr, err := conn.Call(s.tool, map[string]any{"text": "cold"})
	if err != nil {
		return c, err
	}
	c.called = conn.Read.Sub(start)
	if isErr || text != "cold" {
		return c, fmt.Errorf("the first call answered %q (error %v)", text, isErr)
	}
	return c, nil
}

// warmCalls makes n calls of each side's tool over one session each,
// a round at a time in the order's shuffles, and takes the CPU time
// each side's process tree spent on them.
func (r *results) warmCalls(sides []side, n int, order *rand.Rand) error {
	r.warm = make([][]time.Duration, len(sides))
	conns := make([]*mcpline.Conn, len(sides))
	for i, s := range sides {
		c, err := dial(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		defer c.Close()
		if _, err := c.Request("tools/list", map[string]any{}); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		// The first call starts what a cold start would; the warm calls
		// are those after it.
		if _, _, err := c.Call(s.tool, map[string]any{"text": "warm"}); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		conns[i] = c
	}
	before := make([]time.Duration, len(sides))
	for i, c := range conns {
		before[i] = treeCPU(c.Cmd.Process.Pid)
	}
	for range n {
		for _, i := range order.Perm(len(sides)) {
			start := time.Now()
			text, isErr, err := conns[i].Call(sides[i].tool, map[string]any{"text": "bench"})
			if err != nil {
				return fmt.Errorf("%s: call: %w", sides[i].name, err)
			}
			r.warm[i] = append(r.warm[i], conns[i].Read.Sub(start))
			if isErr || text != "bench" {
				return fmt.Errorf("%s: call answered %q (error %v)", sides[i].name, text, isErr)
			}
		}
	}
	r.cpuPerCall = make([]time.Duration, len(sides))
	for i, c := range conns {
		r.cpuPerCall[i] = (treeCPU(c.Cmd.Process.Pid) - before[i]) / time.Duration(n)
	}
	return nil
}

// treeCPU is the CPU time of every process of pid's tree (for the
// switched side: gemkit mcp, its sandbox's processes and the server).
func treeCPU(pid int) time.Duration {
	var d time.Duration
	for _, p := range proc.Tree(pid) {
		t, _ := proc.CPUTime(p)
		d += t
	}
	return d
}

// dial starts the side's process and initializes a session with it.
func dial(s side) (*mcpline.Conn, error) {
	cmd := s.cmd()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c, err := mcpline.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w; stderr: %s", err, stderr.String())
	}
	return c, nil
}

func loadavg() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "?"
	}
	return l
}
