// Command extensions measures `gemkit extensions list` and `describe` as a
// person meets them: the whole process, started afresh each time, with
// 200 extensions installed. It builds gemkit as it ships (CGO_ENABLED=0),
// fills a temporary home with real installs (the "tools" template: three
// tools, a doc, examples, context file), runs each command N times and
// prints p50 and p90. Beside them it times `gemkit --version`, the start
// every command pays before it does anything, and, with -ref, the same
// commands of another gemkit binary (main before a change, say): the runs
// of every gemkit command are interleaved, round after round, so that
// each sees the same load. In the same run, on the same home, it times
// the real Gemini CLI's `gemini extensions list` (interop/node_modules,
// run offline in its own network namespace) as the reference, with each
// tool's peak memory.
//
//	go run ./bench/extensions [-n 50] [-extensions 200] [-gemini-n 5] [-gemkit BIN] [-ref BIN]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 50, "runs of each gemkit command")
	flag.IntVar(&o.count, "extensions", 200, "installed extensions")
	flag.IntVar(&o.geminiN, "gemini-n", 5, "runs of the real Gemini CLI's list (0: skip it)")
	flag.StringVar(&o.gemkit, "gemkit", "", "gemkit binary to measure (default: CGO_ENABLED=0 go build ./cmd/gemkit into a temp dir)")
	flag.StringVar(&o.ref, "ref", "", "another gemkit binary to measure beside it, interleaved (e.g. one built from main)")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	n, count, geminiN int
	gemkit, ref       string
}

// row is one command line measured.
type row struct {
	name  string
	argv  []string
	times []time.Duration
	rss   int64 // the largest peak resident memory, KB
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "gemkit-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	bin := o.gemkit
	if bin == "" {
		if bin, err = benchenv.BuildGemkit(root, tmp); err != nil {
			return err
		}
	}

	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	start := time.Now()
	for i := range o.count {
		src := filepath.Join(tmp, "src", fmt.Sprintf("bench-ext-%03d", i))
		if _, err := extension.CreateFromTemplate(src, "tools"); err != nil {
			return err
		}
		if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
			return err
		}
		if i%3 == 0 {
			if err := st.Disable(fmt.Sprintf("bench-ext-%03d", i), extension.ScopeUser); err != nil {
				return err
			}
		}
	}
	fmt.Printf("installed %d extensions in %v\n", o.count, time.Since(start).Round(time.Millisecond))
	fmt.Printf("%s/%s, %d CPUs, %d runs each, whole process (fork+exec to exit)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.n)
	// The machine is shared: figures mean little without the load they
	// were taken under.
	fmt.Printf("load average before: %s\n", loadAverage())
	defer func() { fmt.Printf("load average after:  %s\n", loadAverage()) }()

	base := []string{"extensions", "--home", home, "--workspace", ws}
	describe := fmt.Sprintf("bench-ext-%03d", o.count/2)
	commands := []struct {
		name string
		args []string
	}{
		{"--version", []string{"--version"}},
		{"list", append(base, "list")},
		{"list --json", append(base, "list", "--json")},
		{"describe", append(base, "describe", describe)},
		{"describe --json", append(base, "describe", describe, "--json")},
	}
	var rows []*row
	for _, b := range []struct{ label, bin string }{{"gemkit", bin}, {"ref", o.ref}} {
		if b.bin == "" {
			continue
		}
		for _, c := range commands {
			rows = append(rows, &row{name: b.label + " " + c.name, argv: append([]string{b.bin}, c.args...)})
		}
	}
	if err := measure(rows, nil, ws, o.n); err != nil {
		return err
	}
	for _, r := range rows {
		report(r)
	}
	if o.geminiN == 0 {
		return nil
	}
	gemini, err := geminiCommand(root, home)
	if err != nil {
		return err
	}
	env := []string{"HOME=" + home, "GEMINI_CLI_HOME=" + home, "GEMINI_API_KEY=x", "NO_COLOR=1", "PATH=" + os.Getenv("PATH")}
	for _, c := range []struct {
		name string
		args []string
	}{{"list", []string{"extensions", "list"}}, {"list -o json", []string{"extensions", "list", "-o", "json"}}} {
		r := &row{name: "gemini " + c.name, argv: append(gemini, c.args...)}
		if err := measure([]*row{r}, env, ws, o.geminiN); err != nil {
			return err
		}
		report(r)
	}
	return nil
}

func report(r *row) {
	fmt.Printf("%-23s p50 %7.1f ms   p90 %7.1f ms   min %7.1f ms   max RSS %4d MB\n", r.name, ms(pct(r.times, 50)), ms(pct(r.times, 90)), ms(r.times[0]), r.rss/1024)
}

// geminiCommand returns the command line that runs the real Gemini CLI
// from interop/node_modules of the repository at root offline: in a new network namespace with no
// interface up (unshare), with settings that skip sign-in and folder
// trust, written into the bench's home.
func geminiCommand(root, home string) ([]string, error) {
	bundle := filepath.Join(root, "interop", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	if _, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("the real Gemini CLI is not installed: run `npm install --no-save` in interop/ (%w)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is needed for the Gemini CLI reference: %w", err)
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("unshare (util-linux) is needed to run the Gemini CLI offline: %w", err)
	}
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		return nil, err
	}
	return []string{unshare, "--user", "--map-root-user", "--net", node, bundle}, nil
}

// measure runs each row's command line n times in dir, with env when
// not nil, in rounds (one run of each row per round, after one warm-up
// round), and keeps each row's sorted wall times and largest peak
// resident memory.
func measure(rows []*row, env []string, dir string, n int) error {
	newCmd := func(argv []string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if env != nil {
			cmd.Env = env
		}
		return cmd
	}
	for _, r := range rows {
		if out, err := newCmd(r.argv).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", r.name, err, out)
		}
	}
	for range n {
		for _, r := range rows {
			cmd := newCmd(r.argv)
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

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
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
