//go:build linux

// Command companion measures gemkit's IDE companion side by side with a
// reference companion built the way the official VS Code one is (Node,
// express, the TypeScript MCP SDK; bench/reference/companion.mjs), in the
// same run, with the same Go MCP client and the same stdio editor driving
// both. It prints one table with the ratios gemkit/reference.
//
//	go run ./bench/companion            # full run (about a minute)
//	go run ./bench/companion -quick     # a few iterations, to check it works
//
// Figures: openDiff call → ack latency; editor event → client context,
// minus the 50 ms debounce; idle RSS after connect; RSS during and after
// 1,000 diff round trips and 10,000 ide/contextUpdate notifications
// received by the client (driven with a 1 ms debounce on fresh servers, so
// that each editor event makes one update in seconds, not minutes); start
// → discovery file written.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/proc"
)

// config sets the sizes of a run.
type config struct {
	root      string // repository root
	gemkit    string // gemkit binary; built when empty
	node      string
	diffs     int // diff round trips (the ack latency is measured on each)
	contexts  int // single editor events timed to the client
	loadDiffs int // diff round trips of the load phase
	updates   int // context updates the client receives in the load phase
	// loadDebounce is the servers' debounce in the load phase (the timed
	// phases run at the real ide.ContextDebounce).
	loadDebounce time.Duration
	starts       int // starts per server for start → discovery
	servers      []string
	rssPoints    int // RSS samples per load step (diffs, then updates)
}

func main() {
	var cfg config
	var quick bool
	var servers string
	flag.StringVar(&cfg.root, "root", "", "repository root (default: found from the working directory)")
	flag.StringVar(&cfg.gemkit, "gemkit", "", "gemkit binary to measure (default: CGO_ENABLED=0 go build ./cmd/gemkit into a temp dir)")
	flag.StringVar(&cfg.node, "node", "node", "node binary for the reference companion")
	flag.IntVar(&cfg.diffs, "diffs", 1000, "diff round trips timed (ack latency), at the real 50 ms debounce")
	flag.IntVar(&cfg.contexts, "contexts", 200, "editor events timed one by one to the client's context, at the real 50 ms debounce")
	flag.IntVar(&cfg.loadDiffs, "load-diffs", 1000, "diff round trips of the RSS load phase")
	flag.IntVar(&cfg.updates, "updates", 10000, "ide/contextUpdate notifications the client receives in the RSS load phase (one editor event each)")
	flag.DurationVar(&cfg.loadDebounce, "load-debounce", time.Millisecond, "the servers' --debounce in the RSS load phase")
	flag.IntVar(&cfg.starts, "starts", 10, "starts per server for start → discovery file")
	flag.StringVar(&servers, "servers", "gemkit,gemkit-gemini-only,reference", "servers to measure (gemkit serves Gemini CLI, Claude Code and Qwen Code; gemkit-gemini-only runs it with --claude=false --qwen=false)")
	flag.BoolVar(&quick, "quick", false, "a few iterations only")
	flag.Parse()
	if quick {
		cfg = quickConfig(cfg)
	}
	cfg.servers = strings.Split(servers, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// quickConfig shrinks cfg to a run of a few seconds.
func quickConfig(cfg config) config {
	cfg.diffs, cfg.contexts, cfg.loadDiffs, cfg.updates, cfg.starts = 20, 5, 20, 200, 2
	return cfg
}

// result holds one server's figures.
type result struct {
	name      string
	acks      []time.Duration
	ctxBeyond []time.Duration
	idleKB    int // the server of the timed phases, at the real debounce
	// The load phase's server, started afresh with cfg.loadDebounce.
	loadIdleKB int
	diffRSS    []rssPoint
	updateRSS  []rssPoint
	afterKB    int
	loadDiffs  int // diff round trips completed in the load phase
	updatesIn  int // ide/contextUpdate notifications received in the load phase
	startups   []time.Duration
}

// loadRSS is every RSS sample of the load phase after its idle one, the
// settled one last.
func (r *result) loadRSS() []rssPoint {
	return append(append(slices.Clone(r.diffRSS), r.updateRSS...), rssPoint{"settled", r.afterKB})
}

type rssPoint struct {
	label string
	kb    int
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.rssPoints == 0 {
		cfg.rssPoints = 4
	}
	if cfg.loadDebounce == 0 {
		cfg.loadDebounce = time.Millisecond
	}
	if cfg.root == "" {
		root, err := benchenv.RepoRoot()
		if err != nil {
			return err
		}
		cfg.root = root
	}
	specs, cleanup, err := buildSpecs(ctx, cfg)
	if err != nil {
		return err
	}
	defer cleanup()

	workspace, err := os.MkdirTemp("", "gemkit-bench-ws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workspace)
	workspace, _ = filepath.EvalSymlinks(workspace)
	files := make([]string, 20)
	for i := range files {
		files[i] = filepath.Join(workspace, fmt.Sprintf("file%02d.txt", i))
		if err := os.WriteFile(files[i], []byte(fmt.Sprintf("line one of %d\nline two\n", i)), 0o644); err != nil {
			return err
		}
	}

	results := make([]*result, len(specs))
	for i, spec := range specs {
		results[i] = &result{name: spec.name}
	}
	fmt.Fprintf(out, "Measuring %s on %d CPUs; timed at the real %s debounce: %d diffs, %d context events; RSS load at a %s debounce: %d diffs, then %d context updates; %d starts.\n",
		strings.Join(cfg.servers, " and "), numCPU(), ide.ContextDebounce, cfg.diffs, cfg.contexts,
		cfg.loadDebounce, cfg.loadDiffs, cfg.updates, cfg.starts)

	// The timed phases, at the debounce the real CLI sees (the official
	// companion's 50 ms, gemini-cli 0.61.0
	// packages/vscode-ide-companion/src/open-files-manager.ts).
	if err := timedPhases(ctx, cfg, specs, workspace, files, results); err != nil {
		return err
	}

	// The RSS load, on servers started afresh with a short debounce so
	// that each editor event makes one context update.
	if err := loadPhases(ctx, cfg, specs, workspace, files, results); err != nil {
		return err
	}

	for n := 0; n < cfg.starts; n++ {
		for i, spec := range specs {
			s, err := startServer(ctx, spec, workspace)
			if err != nil {
				return err
			}
			results[i].startups = append(results[i].startups, s.startup)
			s.stop()
		}
	}
	report(out, cfg, results)
	floor := timerFloor(min(cfg.contexts, 50))
	fmt.Fprintf(out, "For scale: a bare Go time.AfterFunc(50ms) in this harness fires %.3f ms late at p50 (%d samples); gemkit's debounce runs on a Linux timerfd instead (go test -bench AlarmLateness ./companion compares the two).\n",
		ms(percentile(floor, 0.5)), len(floor))
	return nil
}

// timedPhases runs the diffs and the context events against every
// server, at the debounce the real CLI sees.
func timedPhases(ctx context.Context, cfg config, specs []serverSpec, workspace string, files []string, results []*result) error {
	return withServers(ctx, specs, workspace, func(all []*live) error {
		for i, l := range all {
			results[i].idleKB = l.idleKB
		}
		for i, l := range all {
			r := results[i]
			for n := range cfg.diffs {
				d, err := diffRoundTrip(ctx, l.c, files, n)
				if err != nil {
					return fmt.Errorf("%s: diffs: %w (stderr: %s)", r.name, err, l.s.stderr)
				}
				r.acks = append(r.acks, d)
			}
		}
		for i, l := range all {
			if err := contextPhase(ctx, cfg, l.s, l.c, results[i], files); err != nil {
				return fmt.Errorf("%s: context: %w (stderr: %s)", results[i].name, err, l.s.stderr)
			}
		}
		return nil
	})
}

// loadPhases measures the RSS under load, on servers started afresh
// with a short debounce so that each editor event makes one context
// update.
func loadPhases(ctx context.Context, cfg config, specs []serverSpec, workspace string, files []string, results []*result) error {
	loadSpecs := make([]serverSpec, len(specs))
	for i, spec := range specs {
		loadSpecs[i] = spec.with("--debounce", cfg.loadDebounce.String())
	}
	return withServers(ctx, loadSpecs, workspace, func(all []*live) error {
		for i, l := range all {
			results[i].loadIdleKB = l.idleKB
		}
		for i, l := range all {
			if err := loadDiffPhase(ctx, cfg, l.s, l.c, results[i], files); err != nil {
				return fmt.Errorf("%s: load diffs: %w (stderr: %s)", results[i].name, err, l.s.stderr)
			}
		}
		for i, l := range all {
			if err := updatePhase(ctx, cfg, l.s, l.c, results[i], files); err != nil {
				return fmt.Errorf("%s: context updates: %w (stderr: %s)", results[i].name, err, l.s.stderr)
			}
		}
		time.Sleep(time.Second)
		for i, l := range all {
			var err error
			if results[i].afterKB, err = rssKB(l.s.pid()); err != nil {
				return err
			}
		}
		return nil
	})
}

// live is one running server with the harness's client connected.
type live struct {
	s      *server
	c      *mcpClient
	claude *claudeClient // connected when the server serves Claude Code too
	idleKB int           // RSS 0.5 s after the clients connected
}

// withServers starts every spec, connects one client to each, reads each
// one's idle RSS, runs phases, and stops them all, whatever happened.
// Every phase runs on each server in turn, so that all see the same
// machine load.
func withServers(ctx context.Context, specs []serverSpec, workspace string, phases func([]*live) error) error {
	var all []*live
	defer func() {
		for _, l := range all {
			if l.c != nil {
				l.c.close()
			}
			l.claude.close()
			l.s.stop()
		}
	}()
	for _, spec := range specs {
		s, err := startServer(ctx, spec, workspace)
		if err != nil {
			return err
		}
		l := &live{s: s}
		all = append(all, l)
		if l.c, err = connect(ctx, s.file); err != nil {
			return fmt.Errorf("%s: connect: %w (stderr: %s)", spec.name, err, s.stderr)
		}
		// The lock file sits in the server's private CLAUDE_CONFIG_DIR,
		// beside its TMPDIR's gemini/ide.
		lockDir := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(s.discovery))), "claude", "ide")
		if l.claude, err = connectClaude(ctx, lockDir); err != nil {
			return fmt.Errorf("%s: connect as Claude Code: %w", spec.name, err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	for _, l := range all {
		var err error
		if l.idleKB, err = rssKB(l.s.pid()); err != nil {
			return err
		}
	}
	return phases(all)
}

// timerFloor measures how late a 50 ms Go runtime timer fires in an
// otherwise idle process on this machine: what a server debouncing on
// such a timer adds to "beyond debounce".
func timerFloor(n int) []time.Duration {
	var late []time.Duration
	for range n {
		start := time.Now()
		fired := make(chan time.Time, 1)
		time.AfterFunc(ide.ContextDebounce, func() { fired <- time.Now() })
		late = append(late, (<-fired).Sub(start)-ide.ContextDebounce)
	}
	return late
}

func numCPU() int {
	n, _ := proc.CPUs()
	return n
}

// buildSpecs says how to start each server, building gemkit (without the
// race detector) when no binary was given.
func buildSpecs(ctx context.Context, cfg config) ([]serverSpec, func(), error) {
	cleanup := func() {}
	var specs []serverSpec
	for _, name := range cfg.servers {
		switch name {
		case "gemkit", "gemkit-gemini-only":
			bin := cfg.gemkit
			if bin == "" {
				dir, err := os.MkdirTemp("", "gemkit-bench-bin-")
				if err != nil {
					return nil, cleanup, err
				}
				cleanup = func() { os.RemoveAll(dir) }
				bin = filepath.Join(dir, "gemkit")
				// The static binary gemkit ships as. With cgo on, the
				// libcap psx package (under go-landlock) forces external
				// linking, and that binary idles ~3 MB higher, all of it
				// pages of the executable itself.
				cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gemkit")
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
				cmd.Dir = cfg.root
				if b, err := cmd.CombinedOutput(); err != nil {
					return nil, cleanup, fmt.Errorf("go build gemkit: %w: %s", err, b)
				}
			}
			cfg.gemkit = bin // built once for both rows
			argv := []string{bin, "ide", "serve", "--editor", "stdio"}
			if name == "gemkit-gemini-only" {
				argv = append(argv, "--claude=false", "--qwen=false")
			}
			specs = append(specs, serverSpec{name: name, argv: argv})
		case "reference":
			script := filepath.Join(cfg.root, "bench", "reference", "companion.mjs")
			specs = append(specs, serverSpec{name: "reference", argv: []string{cfg.node, script, "--editor", "stdio"}})
		default:
			return nil, cleanup, fmt.Errorf("unknown server %q (want gemkit, gemkit-gemini-only or reference)", name)
		}
	}
	return specs, cleanup, nil
}

// diffRoundTrip makes the n-th openDiff call, returns how long its ack
// took, and waits for the editor's accept to reach the client.
func diffRoundTrip(ctx context.Context, c *mcpClient, files []string, n int) (time.Duration, error) {
	path := files[n%len(files)]
	d, err := c.openDiff(ctx, path, fmt.Sprintf("proposal %d\nline two\n", n))
	if err != nil {
		return 0, err
	}
	return d, c.waitDiff(path, 10*time.Second)
}

// loadDiffPhase runs cfg.loadDiffs diff round trips, sampling RSS.
func loadDiffPhase(ctx context.Context, cfg config, s *server, c *mcpClient, r *result, files []string) error {
	c.drain()
	every := max(cfg.loadDiffs/cfg.rssPoints, 1)
	for n := range cfg.loadDiffs {
		if _, err := diffRoundTrip(ctx, c, files, n); err != nil {
			return err
		}
		r.loadDiffs++
		if (n+1)%every == 0 || n+1 == cfg.loadDiffs {
			kb, err := rssKB(s.pid())
			if err != nil {
				return err
			}
			r.diffRSS = append(r.diffRSS, rssPoint{fmt.Sprintf("%d diffs", n+1), kb})
		}
	}
	return nil
}

// contextPhase times single editor events to the client's receipt of the
// context they caused, and subtracts the debounce.
func contextPhase(ctx context.Context, cfg config, s *server, c *mcpClient, r *result, files []string) error {
	c.drain()
	for i := range cfg.contexts {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := files[i%len(files)]
		line := i + 1
		start, err := s.notifyAt("editor/focus", map[string]any{"path": path, "cursor": ide.Cursor{Line: line, Character: 1}})
		if err != nil {
			return err
		}
		at, err := c.waitContext(path, line, 5*time.Second)
		if err != nil {
			return err
		}
		r.ctxBeyond = append(r.ctxBeyond, at.Sub(start)-ide.ContextDebounce)
	}
	return nil
}

// updatePhase makes the client receive cfg.updates ide/contextUpdate
// notifications: it sends one editor event (focus and selection changes
// across the files, each at a new line) and waits for the update carrying
// it before the next, so that the debounce merges nothing. It samples RSS
// and checks the count of updates the client read off its stream.
func updatePhase(ctx context.Context, cfg config, s *server, c *mcpClient, r *result, files []string) error {
	c.drain()
	before := c.contextsIn.Load()
	every := max(cfg.updates/cfg.rssPoints, 1)
	line := 1_000_000
	for n := range cfg.updates {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := files[(n/3)%len(files)]
		line++
		var err error
		if n%3 == 0 {
			err = s.notify("editor/focus", map[string]any{"path": path, "cursor": ide.Cursor{Line: line, Character: 1}})
		} else {
			err = s.notify("editor/selection", map[string]any{
				"path": path, "cursor": ide.Cursor{Line: line, Character: 3},
				"selectedText": fmt.Sprintf("selected text %d", n),
			})
		}
		if err != nil {
			return err
		}
		if _, err := c.waitContext(path, line, 5*time.Second); err != nil {
			return fmt.Errorf("update %d: %w", n+1, err)
		}
		if (n+1)%every == 0 || n+1 == cfg.updates {
			kb, err := rssKB(s.pid())
			if err != nil {
				return err
			}
			r.updateRSS = append(r.updateRSS, rssPoint{fmt.Sprintf("%d updates", n+1), kb})
		}
	}
	r.updatesIn = int(c.contextsIn.Load() - before)
	if r.updatesIn < cfg.updates {
		return fmt.Errorf("the client received %d context updates, want at least %d", r.updatesIn, cfg.updates)
	}
	return nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// grows reports whether RSS rose steadily under load: every sample of
// the second half more than 1 MiB above every sample of the first half. A
// collected heap swings up and down under load; a leak only climbs.
func grows(points []rssPoint) bool {
	if len(points) < 2 {
		return false
	}
	first, second := points[:len(points)/2], points[len(points)/2:]
	high := first[0].kb
	for _, p := range first {
		high = max(high, p.kb)
	}
	low := second[0].kb
	for _, p := range second {
		low = min(low, p.kb)
	}
	return low-high > 1024
}

// report prints the table of figures, gemkit first, with ratios and the
// issue's targets.
func report(out io.Writer, cfg config, results []*result) {
	var g, ref *result
	for _, r := range results {
		switch r.name {
		case "gemkit":
			g = r
		case "reference":
			ref = r
		}
	}
	type row struct {
		name   string
		unit   string
		value  func(*result) float64
		target float64 // 0: none
	}
	loadMax := func(r *result) float64 {
		m := 0
		for _, p := range r.loadRSS() {
			m = max(m, p.kb)
		}
		return float64(m) / 1024
	}
	load := fmt.Sprintf("%s diffs + %s context updates", thousands(cfg.loadDiffs), thousands(cfg.updates))
	rows := []row{
		{"openDiff → ack p50", "ms", func(r *result) float64 { return ms(percentile(r.acks, 0.50)) }, 0.5},
		{"openDiff → ack p99", "ms", func(r *result) float64 { return ms(percentile(r.acks, 0.99)) }, 0},
		{"event → context beyond debounce p50", "ms", func(r *result) float64 { return ms(percentile(r.ctxBeyond, 0.50)) }, 0.5},
		{"event → context beyond debounce p99", "ms", func(r *result) float64 { return ms(percentile(r.ctxBeyond, 0.99)) }, 0},
		{"idle RSS after connect", "MB", func(r *result) float64 { return float64(r.idleKB) / 1024 }, 15},
		{"max RSS over " + load, "MB", loadMax, 25},
		{"RSS after " + load + " (settled 1 s)", "MB", func(r *result) float64 { return float64(r.afterKB) / 1024 }, 25},
		{"start → discovery file p50", "ms", func(r *result) float64 { return ms(percentile(r.startups, 0.50)) }, 30},
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(out)
	header := "metric\tunit\t"
	for _, r := range results {
		header += r.name + "\t"
	}
	if g != nil && ref != nil {
		header += "gemkit/reference\t"
	}
	header += "target (gemkit)\t"
	fmt.Fprintln(tw, header)
	for _, rw := range rows {
		line := rw.name + "\t" + rw.unit + "\t"
		for _, r := range results {
			line += fmt.Sprintf("%.3f\t", rw.value(r))
		}
		if g != nil && ref != nil {
			if d := rw.value(ref); d > 0 {
				line += fmt.Sprintf("%.3f\t", rw.value(g)/d)
			} else {
				line += "-\t"
			}
		}
		if rw.target > 0 && g != nil {
			verdict := "met"
			if rw.value(g) > rw.target {
				verdict = "MISSED"
			}
			line += fmt.Sprintf("≤ %g %s\t", rw.target, verdict)
		} else {
			line += "\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintf(out, "RSS load: fresh servers at a %s debounce, one editor event per context update (each waited for).\n", cfg.loadDebounce)
	for _, r := range results {
		fmt.Fprintf(out, "%s RSS (MB): idle %.1f", r.name, float64(r.loadIdleKB)/1024)
		for _, p := range r.loadRSS() {
			fmt.Fprintf(out, "; %s %.1f", p.label, float64(p.kb)/1024)
		}
		fmt.Fprintln(out)
		points := r.loadRSS()
		// Judged per step: the first diffs warm the heap up, which is
		// no leak, and a climb during the updates alone must show.
		var grew []string
		if grows(r.diffRSS) {
			grew = append(grew, "diffs")
		}
		if grows(append(slices.Clone(r.updateRSS), rssPoint{"settled", r.afterKB})) {
			grew = append(grew, "context updates")
		}
		verdict := "no growth"
		if len(grew) > 0 {
			verdict = "GROWS during the " + strings.Join(grew, " and the ")
		}
		fmt.Fprintf(out, "%s RSS under load: %s (%+.1f MB from the first load sample to settled; %d acks, %d timed contexts, %d diffs and %d context updates received under load, %d starts)\n",
			r.name, verdict, float64(points[len(points)-1].kb-points[0].kb)/1024,
			len(r.acks), len(r.ctxBeyond), r.loadDiffs, r.updatesIn, len(r.startups))
	}
}

// thousands formats n with commas: 10000 → "10,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
