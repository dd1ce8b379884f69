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
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/bench/internal/mcpline"
	"github.com/gemkit/gemkit/internal/extension"
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
