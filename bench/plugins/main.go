//go:build linux

// Command plugins measures `gemkit plugins list` as a person meets it:
// the whole process, started afresh each time, with 50 plugins
// installed by the real Claude Code 2.1.330 (interop/node_modules) from
// a directory marketplace of generated plugins, each with one part of
// every kind (an MCP server, two hooks, an LSP server, a monitor, a
// skill, an agent, a command), a third of them disabled. In the same
// run, on the same home, interleaved round by round so that both see
// the same load, it times Claude Code's own `claude plugin list` as the
// reference (offline, in a network namespace of its own), after
// checking that both list the same plugins, enabled alike, with the
// same servers. It prints p50, p90, min and each command's peak memory.
//
//	go run ./bench/plugins [-n 50] [-plugins 50] [-claude-n 20] [-gemkit BIN] [-ref BIN]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 50, "runs of each gemkit command")
	flag.IntVar(&o.count, "plugins", 50, "installed plugins")
	flag.IntVar(&o.claudeN, "claude-n", 20, "runs of each of Claude Code's commands, interleaved with gemkit's (0: leave them out)")
	flag.StringVar(&o.gemkit, "gemkit", "", "gemkit binary to measure (default: CGO_ENABLED=0 go build ./cmd/gemkit into a temp dir)")
	flag.StringVar(&o.ref, "ref", "", "another gemkit binary to measure beside it, interleaved (e.g. one built from main)")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	n, count, claudeN int
	gemkit, ref       string
}

// row is one command line measured, runs times.
type row struct {
	name  string
	argv  []string
	env   []string
	runs  int
	times []time.Duration
	rss   int64 // the largest peak resident memory, KB
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
	tmp, bin, err := benchenv.ScratchOr("gemkit-bench-plugins-", o.gemkit)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	h := newHome(tmp, claude)
	start := time.Now()
	if err := h.install(o.count); err != nil {
		return err
	}
	fmt.Printf("Claude Code installed %d plugins (%d disabled) in %v\n", o.count, (o.count+2)/3, time.Since(start).Round(time.Millisecond))
	if err := h.sameList(bin); err != nil {
		return err
	}
	fmt.Printf("%s/%s, %d CPUs, %d runs of each gemkit command, %d of Claude Code's, whole process (fork+exec to exit)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.n, o.claudeN)
	// The machine is shared: figures mean little without the load they
	// were taken under.
	fmt.Printf("load average before: %s\n", loadAverage())
	defer func() { fmt.Printf("load average after:  %s\n", loadAverage()) }()

	var rows []*row
	for _, b := range []struct{ label, bin string }{{"gemkit", bin}, {"ref", o.ref}} {
		if b.bin == "" {
			continue
		}
		for _, args := range [][]string{{"--version"}, {"plugins", "list"}, {"plugins", "list", "--json"}} {
			rows = append(rows, &row{name: b.label + " " + strings.Join(args, " "), argv: append([]string{b.bin}, args...), env: h.env, runs: o.n})
		}
	}
	if o.claudeN > 0 {
		for _, args := range [][]string{{"plugin", "list"}, {"plugin", "list", "--json"}} {
			rows = append(rows, &row{name: "claude " + strings.Join(args, " "), argv: h.claude(args...), env: h.env, runs: o.claudeN})
		}
	}
	if err := measure(rows, h.proj); err != nil {
		return err
	}
	for _, r := range rows {
		report(r)
	}
	return nil
}

// measure runs each row's command line in dir, in rounds (one run of
// each row per round while it has runs left, after one warm-up round),
// and keeps each row's sorted wall times and largest peak memory.
func measure(rows []*row, dir string) error {
	newCmd := func(r *row) *exec.Cmd {
		cmd := exec.Command(r.argv[0], r.argv[1:]...)
		cmd.Dir, cmd.Env = dir, r.env
		return cmd
	}
	most := 0
	for _, r := range rows {
		if out, err := newCmd(r).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", r.name, err, out)
		}
		most = max(most, r.runs)
	}
	for i := range most {
		for _, r := range rows {
			if i >= r.runs {
				continue
			}
			cmd := newCmd(r)
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			r.times = append(r.times, time.Since(start))
			r.rss = max(r.rss, peakRSS(cmd.ProcessState))
		}
	}
	for _, r := range rows {
		sort.Slice(r.times, func(i, j int) bool { return r.times[i] < r.times[j] })
	}
	return nil
}

func report(r *row) {
	fmt.Printf("%-28s p50 %7.1f ms   p90 %7.1f ms   min %7.1f ms   max RSS %4d MB\n", r.name, ms(pct(r.times, 50)), ms(pct(r.times, 90)), ms(r.times[0]), r.rss/1024)
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := max((len(sorted)*p+99)/100, 1)
	return sorted[i-1]
}

// loadAverage returns the 1, 5 and 15 minute load averages, or
// "unknown".
func loadAverage() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "unknown"
	}
	return l
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
