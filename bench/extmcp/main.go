//go:build linux

// Command extmcp measures what gemkit's sandbox costs an extension's own
// MCP server (issue 38's targets): a tools/call of server-everything's
// echo through `gemkit mcp --extension-servers` (the server in the
// sandbox, behind gemkit's proxy) beside the same call to the same
// server started bare, and a cold start of each: from the process start
// to the answer of the first tools/list that holds the server's tools,
// and to the answer of the first tools/call after it (for gemkit: its
// own start, initialize, and the sandboxed server's start and listing,
// the list answered from what gemkit kept of the server's last listing
// once it has one, the server started behind it; bare: node's start,
// initialize, tools/list, tools/call). The first call is the cold start
// that counts: only then has the server surely started.
// Calls and starts alternate between the two, round after round, so
// that both see the same load.
//
//	go run ./bench/extmcp [-n 500] [-starts 20] [-gemkit BIN] [-ref BIN]
//
// Three relays stand beside gemkit as the least a process between the
// client and the server can add to a call: this program as a Go byte
// copier (its stdin read blocking, as io.Copy of os.Stdin does), the
// same with both ends in Go's poller and raw system calls (gemkit mcp's
// I/O, internal/pipeio), and testdata/relay.c (built with the machine's C compiler,
// left out without one), two threads each blocked in read(2), one
// wake-up per crossing and nothing else. The relay in the poller runs
// a second time with its node in a session of its own (setsid), as
// gemkit's sandbox starts a server, so that what that costs a call is
// told apart from gemkit's own work.
//
// -ref adds a further side, the same through another gemkit binary (an
// earlier commit's), so that a change is measured against it in the
// same run.
//
// The same package is also started as a published manifest starts it,
// `npx -y @modelcontextprotocol/server-everything`, three ways: through
// gemkit mcp once gemkit pinned it at the switch (its package installed
// from a loopback npm registry serving interop/mcp-servers's packages,
// internal/npmregistrytest, and run from the pinned tree in the
// sandbox); bare from that tree (node and its program); and by npx
// itself, as Gemini CLI runs it, with its cache warm (it still asks the
// registry for the package's metadata at each start).
//
// The client is bench/internal/mcpline, the same for both.
// server-everything is interop/mcp-servers's pinned copy (`npm ci` there
// first), copied into the extension's folder as a published extension
// ships it.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/proc"
)

const manifest = `{"name": "realmcp", "version": "1.0.0", "description": "server-everything, as an extension ships it.",
 "mcpServers": {"everything": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]}}}`

// npxManifest starts server-everything as most published manifests
// start their server: through npx, the newest version.
const npxManifest = `{"name": "npxmcp", "version": "1.0.0", "description": "server-everything, as a published manifest starts it.",
 "mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}`

// copierEnv makes this program the copier of the side "through a byte
// copier": it starts its arguments and copies their stdin and stdout,
// the least any process between a client and a server adds.
const copierEnv = "GEMKIT_BENCH_EXTMCP_COPIER"

func main() {
	switch os.Getenv(copierEnv) {
	case "1":
		os.Exit(copier(os.Args[1:]))
	case "poll":
		os.Exit(pollCopier(os.Args[1:], false))
	case "pollsid":
		os.Exit(pollCopier(os.Args[1:], true))
	}
	n := flag.Int("n", 500, "warm calls of each")
	starts := flag.Int("starts", 40, "cold starts of each (rounds)")
	seedFlag := flag.Uint64("seed", 0, "seed of the rounds' order (0: from the clock)")
	gemkit := flag.String("gemkit", "", "gemkit binary (default: built from the repository as it ships)")
	ref := flag.String("ref", "", "a second gemkit binary measured beside the first (an earlier commit's)")
	withNPX := flag.Bool("npx", true, "also measure the server started as a published manifest starts it (npx), pinned")
	peers := flag.Bool("peers", true, "also measure the server under bubblewrap and under sandbox-runtime")
	flag.Parse()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	if err := run(*n, *starts, seed, *gemkit, *ref, *withNPX, *peers); err != nil {
		fmt.Fprintln(os.Stderr, "extmcp:", err)
		os.Exit(1)
	}
}

func run(n, starts int, seed uint64, bin, ref string, withNPX, peers bool) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gemkit-bench-extmcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	if bin == "" {
		if bin, err = benchenv.BuildGemkit(root, tmp); err != nil {
			return err
		}
	}
	ws, ext, env, refEnv, err := setUpExtension(root, tmp, bin, ref)
	if err != nil {
		return err
	}
	var npx *npxSetup
	if withNPX {
		if npx, err = pinNPX(root, tmp, bin); err != nil {
			return err
		}
		defer npx.close()
	}
	// An installed extension's files are older than the 2 s within which
	// the consent check's digest cache does not trust a file's stat (a
	// change may hide in the timestamps' granularity): the starts measure
	// that case, not a folder copied a moment ago.
	time.Sleep(extension.RacyWindow + 100*time.Millisecond)
	sides, at, err := buildSides(root, tmp, ws, ext, bin, ref, env, refEnv, peers, npx)
	if err != nil {
		return err
	}
	load := loadavg()
	// Each round starts every side once, in an order of its own (a
	// shuffle, seeded so that a run can be repeated): no side always
	// follows the same other one, whose exit may leave the machine busier
	// or its caches warmer. The costs below are paired by round.
	order := rand.New(rand.NewPCG(seed, 0))
	var r results
	if err := r.coldStarts(sides, starts, order, tmp); err != nil {
		return err
	}
	if err := r.warmCalls(sides, n, order); err != nil {
		return err
	}
	fmt.Printf("%s/%s, %d CPUs; %d calls and %d cold starts of each, in rounds of one of each (starts in a shuffled order, seed %d)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), n, starts, seed)
	fmt.Printf("load average before: %s, after: %s\n", load, loadavg())
	r.printTable(sides, at)
	r.printPaired(sides, at)
	r.printNPX(sides, at, npx)
	return nil
}

// setUpExtension copies interop/mcp-servers's server-everything into an
// extension folder, as a published extension ships it, and links it
// with consent in the home of gemkit and of the reference (each its own,
// where it records consent and keeps its digest cache, as it would
// itself). It returns the workspace, the extension folder, and the
// environments of the two.
func setUpExtension(root, tmp, bin, ref string) (ws, ext string, env, refEnv []string, err error) {
	src := filepath.Join(root, "interop", "mcp-servers", "node_modules")
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-everything")); err != nil {
		return "", "", nil, nil, fmt.Errorf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%w)", err)
	}
	home := filepath.Join(tmp, "home")
	ws, ext = filepath.Join(tmp, "ws"), filepath.Join(tmp, "ext")
	for _, d := range []string{home, ws, ext} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", nil, nil, err
		}
	}
	if out, err := exec.Command("cp", "-a", src, filepath.Join(ext, "node_modules")).CombinedOutput(); err != nil {
		return "", "", nil, nil, fmt.Errorf("copy the servers: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(ext, "gemini-extension.json"), []byte(manifest), 0o644); err != nil {
		return "", "", nil, nil, err
	}
	env = environ(home, tmp)
	// The reference gets a home of its own, where it links the same
	// folder and records consent, and keeps its digest cache, as it
	// would itself.
	refEnv = environ(filepath.Join(tmp, "home-ref"), tmp)
	for _, l := range []struct {
		bin string
		env []string
	}{{bin, env}, {ref, refEnv}} {
		if l.bin == "" {
			continue
		}
		link := exec.Command(l.bin, "extensions", "link", "--consent", ext)
		link.Env = l.env
		if out, err := link.CombinedOutput(); err != nil {
			return "", "", nil, nil, fmt.Errorf("link with %s: %v: %s", l.bin, err, out)
		}
	}
	return ws, ext, env, refEnv, nil
}

// sideIndex says where the optional sides sit in the list, -1 for one
// left out; the peers run from peerFirst to npxFirst, the npx sides
// from npxFirst.
type sideIndex struct {
	relayAt, pollAt, pollSidAt, refAt, peerFirst, npxFirst int
}

// buildSides lists the ways to reach the server: through gemkit, bare,
// through the relays that stand beside gemkit, through the reference,
// under the peers' sandboxes and as npx starts it.
func buildSides(root, tmp, ws, ext, bin, ref string, env, refEnv []string, peers bool, npx *npxSetup) ([]side, sideIndex, error) {
	var at sideIndex
	script := filepath.Join(ext, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sides := []side{
		{name: "through gemkit (sandboxed)", tool: "realmcp_echo", cmd: func() *exec.Cmd {
			c := exec.Command(bin, "mcp", "--code-intel=false", "--extension-servers")
			c.Dir, c.Env = ws, env
			return c
		}},
		{name: "bare", tool: "echo", cmd: func() *exec.Cmd {
			c := exec.Command("node", script)
			c.Dir, c.Env = ws, env
			return c
		}},
	}
	self, err := os.Executable()
	if err != nil {
		return nil, at, err
	}
	sides = append(sides, side{name: "through a byte copier", tool: "echo", cmd: func() *exec.Cmd {
		c := exec.Command(self, "node", script)
		c.Dir, c.Env = ws, append(env, copierEnv+"=1")
		return c
	}})
	// The least any relaying process can do: testdata/relay.c, two
	// threads each blocked in read(2), built here with the C compiler.
	at.relayAt = len(sides)
	if relay, err := buildRelay(root, tmp); err != nil {
		at.relayAt = -1
		fmt.Fprintln(os.Stderr, "extmcp: the C relay's side is left out:", err)
	} else {
		sides = append(sides, side{name: "through a C relay", tool: "echo", cmd: func() *exec.Cmd {
			c := exec.Command(relay, "node", script)
			c.Dir, c.Env = ws, env
			return c
		}})
	}
	// The same copy with both ends in the poller, read and written with
	// raw system calls (internal/pipeio), as gemkit mcp reads its client
	// and its server: what a Go relay with gemkit's I/O adds.
	at.pollAt = len(sides)
	sides = append(sides, side{name: "through a Go relay in the poller", tool: "echo", cmd: func() *exec.Cmd {
		c := exec.Command(self, "node", script)
		c.Dir, c.Env = ws, append(env, copierEnv+"=poll")
		return c
	}})
	// The same relay with its node in a session of its own (setsid), as
	// gemkit's sandbox starts a server: the kernel's autogroup then
	// schedules the node in a group of its own.
	at.pollSidAt = len(sides)
	sides = append(sides, side{name: "through a Go relay, own session", tool: "echo", cmd: func() *exec.Cmd {
		c := exec.Command(self, "node", script)
		c.Dir, c.Env = ws, append(env, copierEnv+"=pollsid")
		return c
	}})
	at.refAt = len(sides)
	if ref == "" {
		at.refAt = -1
	} else {
		sides = append(sides, side{name: "through the reference", tool: "realmcp_echo", cmd: func() *exec.Cmd {
			c := exec.Command(ref, "mcp", "--code-intel=false", "--extension-servers")
			c.Dir, c.Env = ws, refEnv
			return c
		}})
	}
	at.peerFirst = len(sides)
	if peers {
		sides = append(sides, peerSides(root, tmp, ws, script, env)...)
	}
	at.npxFirst = len(sides)
	if npx != nil {
		sides = append(sides, npx.sides(ws)...)
	}
	return sides, at, nil
}

// results holds each side's measures, by side and then by round.
type results struct {
	warm, cold, listed, coldCPU [][]time.Duration
	cpuPerCall                  []time.Duration
}

// coldStarts starts each side once a round, starts rounds, in the
// order's shuffles.
func (r *results) coldStarts(sides []side, starts int, order *rand.Rand, tmp string) error {
	perf, _ := exec.LookPath("perf")
	r.cold = make([][]time.Duration, len(sides))
	r.listed = make([][]time.Duration, len(sides))
	// The CPU time of each cold start's whole process tree, to its exit:
	// unlike the time, the machine's load does not inflate it many times
	// over. With perf on PATH it is counted in rounds of their own, each
	// start under `perf stat -e task-clock`, which counts every process
	// the side starts (bubblewrap and sandbox-runtime do not wait(2) for
	// all of theirs); else it is what wait4 says of the side's process
	// and all it waited for.
	r.coldCPU = make([][]time.Duration, len(sides))
	for range starts {
		for _, i := range order.Perm(len(sides)) {
			s := sides[i]
			list, call, cpu, err := coldStart(s)
			if err != nil {
				return fmt.Errorf("%s: cold start: %w", s.name, err)
			}
			r.coldCPU[i] = append(r.coldCPU[i], cpu)
			r.listed[i] = append(r.listed[i], list)
			r.cold[i] = append(r.cold[i], call)
		}
	}
	if perf != "" {
		if counted, err := perfRounds(sides, starts, order, perf, filepath.Join(tmp, "perf-stat")); err != nil {
			fmt.Fprintf(os.Stderr, "extmcp: the CPU time is wait4's, perf stat failed: %v\n", err)
		} else {
			r.coldCPU = counted
		}
	}
	return nil
}

// warmCalls makes n calls of each side's tool over one session each,
// a round at a time in the order's shuffles, and the CPU time a call
// costs the process started.
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
		conns[i] = c
	}
	args := map[string]any{"message": "bench"}
	// The CPU time the gemkit processes spend on the calls (all their
	// threads', from the kernel's accounting): unlike the latency, it
	// does not grow with the machine's load.
	cpuBefore := make([]time.Duration, len(sides))
	for i, c := range conns {
		cpuBefore[i] = cpuTime(c.Cmd.Process.Pid)
	}
	for range n {
		for _, i := range order.Perm(len(sides)) {
			s := sides[i]
			start := time.Now()
			raw, err := conns[i].Request("tools/call", map[string]any{"name": s.tool, "arguments": args})
			if err != nil {
				return fmt.Errorf("%s: call: %w", s.name, err)
			}
			r.warm[i] = append(r.warm[i], time.Since(start))
			if !strings.Contains(string(raw), "bench") {
				return fmt.Errorf("%s: call answered %s", s.name, raw)
			}
		}
	}
	r.cpuPerCall = make([]time.Duration, len(sides))
	for i, c := range conns {
		r.cpuPerCall[i] = (cpuTime(c.Cmd.Process.Pid) - cpuBefore[i]) / time.Duration(n)
	}
	return nil
}

// row is the layout of the table's lines.
const row = "%-40s %14s %14s %14s %14s %14s\n"

// printTable prints each side's medians, then what each costs over bare
// and gemkit's cost less each peer's.
func (r *results) printTable(sides []side, at sideIndex) {
	warm, listed, cold, coldCPU := r.warm, r.listed, r.cold, r.coldCPU
	relayAt, pollAt, pollSidAt, refAt, peerFirst, npxFirst := at.relayAt, at.pollAt, at.pollSidAt, at.refAt, at.peerFirst, at.npxFirst
	fmt.Println("first list: from the spawn to the answer of initialize and then of a tools/list that holds the tool; cold start: to the answer of the first tools/call after it")
	fmt.Printf(row, "", "call p50", "call p90", "first list p50", "cold start p50", "start CPU p50")
	for i, s := range sides {
		fmt.Printf(row, s.name, ms(pct(warm[i], 50)), ms(pct(warm[i], 90)), ms(pct(listed[i], 50)), ms(pct(cold[i], 50)), ms(pct(coldCPU[i], 50)))
	}
	cost := func(name string, i int) {
		fmt.Printf(row, name, ms(pct(warm[i], 50)-pct(warm[1], 50)), "", ms(pct(listed[i], 50)-pct(listed[1], 50)), ms(pct(cold[i], 50)-pct(cold[1], 50)), ms(pct(coldCPU[i], 50)-pct(coldCPU[1], 50)))
	}
	cost("gemkit's cost", 0)
	cost("a byte copier's cost", 2)
	if relayAt >= 0 {
		cost("a C relay's cost", relayAt)
	}
	cost("a Go relay in the poller's cost", pollAt)
	cost("a Go relay, own session: cost", pollSidAt)
	if refAt >= 0 {
		cost("the reference's cost", refAt)
	}
	for i := peerFirst; i < npxFirst; i++ {
		cost(sides[i].name+": cost", i)
	}
	for i := peerFirst; i < npxFirst; i++ {
		fmt.Printf(row, "gemkit's cost − "+sides[i].name[len("under "):]+"'s", ms(pct(warm[0], 50)-pct(warm[i], 50)), "",
			ms(pct(listed[0], 50)-pct(listed[i], 50)), ms(pct(cold[0], 50)-pct(cold[i], 50)), ms(pct(coldCPU[0], 50)-pct(coldCPU[i], 50)))
	}
}

// printPaired prints the costs paired by round.
func (r *results) printPaired(sides []side, at sideIndex) {
	warm, cold, coldCPU := r.warm, r.cold, r.coldCPU
	relayAt, pollAt, pollSidAt, refAt, peerFirst, npxFirst := at.relayAt, at.pollAt, at.pollSidAt, at.refAt, at.peerFirst, at.npxFirst
	// The same costs paired by round: each round's difference, then
	// their median, with the range that holds the true median with 95%
	// confidence (order statistics of the differences). A difference of
	// two medians taken over a run whose load drifts mixes the drift
	// into the cost; a round's sides ran within seconds of each other.
	fmt.Println("paired by round: the median of the rounds' differences [95% confidence range of that median]")
	paired := func(name string, a, b int) {
		fmt.Printf("%-40s call %s   cold start %s   start CPU %s\n", name,
			medianCI(diffs(warm[a], warm[b])), medianCI(diffs(cold[a], cold[b])), medianCI(diffs(coldCPU[a], coldCPU[b])))
	}
	paired("gemkit over bare", 0, 1)
	paired("a byte copier over bare", 2, 1)
	if relayAt >= 0 {
		paired("a C relay over bare", relayAt, 1)
		paired("gemkit over a C relay", 0, relayAt)
	}
	paired("a Go relay in the poller over bare", pollAt, 1)
	paired("gemkit over a Go relay in the poller", 0, pollAt)
	paired("a Go relay, own session, over bare", pollSidAt, 1)
	paired("the same over the relay", pollSidAt, pollAt)
	paired("gemkit over a Go relay, own session", 0, pollSidAt)
	if refAt >= 0 {
		paired("the reference over bare", refAt, 1)
		paired("gemkit over the reference", 0, refAt)
	}
	for i := peerFirst; i < npxFirst; i++ {
		paired(sides[i].name[len("under "):]+" over bare", i, 1)
	}
	for i := peerFirst; i < npxFirst; i++ {
		// Issue 45's targets: gemkit's cold start at most 10 ms more over
		// bare than bubblewrap's (bare cancels in a round: gemkit's start
		// less bubblewrap's); a call at most 0.1 ms over bare.
		paired("gemkit over "+sides[i].name[len("under "):], 0, i)
	}
	for i := peerFirst; i < npxFirst; i++ {
		// What one Go program in the path costs against the peer, on
		// this machine and in this run: a floor beneath gemkit's, which
		// starts two (itself and its sandbox child).
		paired("a Go relay in the poller over "+sides[i].name[len("under "):], pollAt, i)
	}
}

// printNPX prints the npx sides' costs against the pinned package run
// bare from its tree, when they ran, then the CPU per call and the
// targets.
func (r *results) printNPX(sides []side, at sideIndex, npx *npxSetup) {
	warm, listed, cold, coldCPU, cpuPerCall := r.warm, r.listed, r.cold, r.coldCPU, r.cpuPerCall
	npxFirst := at.npxFirst
	if npx == nil {
		printCPU(sides, cpuPerCall)
		fmt.Println("targets (issue 45): a call at most 0.1 ms over bare at p50; a cold start at most 10 ms more over bare than bubblewrap's (gemkit over bubblewrap, paired)")
		return
	}
	// The npx sides, against the pinned package run bare from its tree.
	bareNPX := npxFirst + 1
	costVs := func(name string, i int) {
		fmt.Printf(row, name, ms(pct(warm[i], 50)-pct(warm[bareNPX], 50)), "", ms(pct(listed[i], 50)-pct(listed[bareNPX], 50)), ms(pct(cold[i], 50)-pct(cold[bareNPX], 50)), ms(pct(coldCPU[i], 50)-pct(coldCPU[bareNPX], 50)))
	}
	costVs("npx pinned: gemkit's cost", npxFirst)
	costVs("npx itself: its cost", npxFirst+2)
	printCPU(sides, cpuPerCall)
	fmt.Println("targets (issue 45): a call at most 0.1 ms over bare at p50; a cold start at most 10 ms more over bare than bubblewrap's (gemkit over bubblewrap, paired)")
	fmt.Printf("npx: %s\n", npx.pinned)
}

// printCPU prints the CPU time per call of the processes on the client's
// side of the pipe (gemkit's own, the copier, bwrap's or srt's outer
// process), which the machine's load does not inflate as it inflates the
// time of a call.
func printCPU(sides []side, cpuPerCall []time.Duration) {
	for i, s := range sides {
		who := "the process started"
		if strings.Contains(s.name, "gemkit") || strings.Contains(s.name, "reference") {
			who = "the gemkit process"
		} else if s.name == "bare" || strings.HasPrefix(s.name, "npx package") {
			who = "the server (node)"
		}
		fmt.Printf("CPU per call of %s, %s: %.1f µs\n", who, s.name, float64(cpuPerCall[i])/float64(time.Microsecond))
	}
}

// side is one way to reach the server.
type side struct {
	name, tool string
	cmd        func() *exec.Cmd
}

// coldStart is the time from the process start to the answer of a
// tools/list that holds the side's tool, and to the answer of the
// first call of the tool after it.
func coldStart(s side) (list, call, cpu time.Duration, err error) {
	start := time.Now()
	c, err := dial(s)
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		c.Close()
		if ru, ok := c.Cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}()
	raw, err := c.Request("tools/list", map[string]any{})
	if err != nil {
		return 0, 0, 0, err
	}
	list = time.Since(start)
	if !strings.Contains(string(raw), `"`+s.tool+`"`) {
		return 0, 0, 0, fmt.Errorf("tools/list lacks %s", s.tool)
	}
	raw, err = c.Request("tools/call", map[string]any{"name": s.tool, "arguments": map[string]any{"message": "cold"}})
	if err != nil {
		return 0, 0, 0, err
	}
	call = time.Since(start)
	if !strings.Contains(string(raw), "cold") {
		return 0, 0, 0, fmt.Errorf("the first call answered %s", raw)
	}
	return list, call, 0, nil
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

// environ is this process's environment with the bench's own HOME and
// TMPDIR and nothing of the person's Gemini or gemkit set-up.
func environ(home, tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// NODE_*: a NODE_EXTRA_CA_CERTS has node read and parse a
		// certificate bundle at each start (220 KB here, tens of
		// milliseconds of CPU), and gemkit's sandbox passes the server
		// none of the person's variables: the bare sides paid for it
		// alone, which made gemkit's start look cheaper than it is.
		if k == "HOME" || k == "TMPDIR" || k == "XDG_CONFIG_HOME" || k == "XDG_DATA_HOME" || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GEMKIT_") || strings.HasPrefix(k, "NODE_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "TMPDIR="+tmp)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// diffs are a's samples less b's, round by round.
func diffs(a, b []time.Duration) []time.Duration {
	d := make([]time.Duration, min(len(a), len(b)))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}

// medianCI is d's median and the range of order statistics that holds
// the median of d's distribution with at least 95% confidence (the
// sign test's: ranks n/2 ∓ 0.98√n, from the binomial's normal
// approximation; with few samples the range is wide, as it should be).
func medianCI(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	k := int(math.Floor(float64(n)/2 - 0.98*math.Sqrt(float64(n))))
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	if k < 0 {
		return fmt.Sprintf("%s [n=%d: too few for a range]", ms(med), n)
	}
	return fmt.Sprintf("%s [%s, %s]", ms(med), ms(s[k]), ms(s[n-1-k]))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// cpuTime is the time on CPU of every thread of the process pid.
func cpuTime(pid int) time.Duration {
	d, _ := proc.CPUTime(pid)
	return d
}

func loadavg() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "?"
	}
	return l
}
