// Command extensions measures `gemkit extensions list` and `describe` as a
// person meets them: the whole process, started afresh each time, with
// 200 extensions installed. It builds gemkit, fills a temporary home with
// real installs (the "tools" template: three tools, a doc, examples,
// context file), runs each command N times and prints p50 and p90. In the
// same run, on the same home, it times the real Gemini CLI's
// `gemini extensions list` (interop/node_modules, run offline in its own
// network namespace) as the reference, with each tool's peak memory.
//
//	go run ./bench/extensions [-n 50] [-extensions 200] [-gemini-n 5]
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
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
)

func main() {
	n := flag.Int("n", 50, "runs of each command")
	count := flag.Int("extensions", 200, "installed extensions")
	geminiN := flag.Int("gemini-n", 5, "runs of the real Gemini CLI's list (0: skip it)")
	flag.Parse()
	if err := run(*n, *count, *geminiN); err != nil {
		log.Fatal(err)
	}
}

func run(n, count, geminiN int) error {
	tmp, err := os.MkdirTemp("", "gemkit-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	bin := filepath.Join(tmp, "gemkit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build gemkit (run from the repository root): %w", err)
	}

	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	start := time.Now()
	for i := range count {
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
	fmt.Printf("installed %d extensions in %v\n", count, time.Since(start).Round(time.Millisecond))
	fmt.Printf("%s/%s, %d CPUs, %d runs each, whole process (fork+exec to exit)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), n)
	// The machine is shared: figures mean little without the load they
	// were taken under.
	fmt.Printf("load average before: %s\n", loadAverage())
	defer func() { fmt.Printf("load average after:  %s\n", loadAverage()) }()

	base := []string{"extensions", "--home", home, "--workspace", ws}
	type command struct {
		name string
		args []string
	}
	for _, c := range []command{
		{"list", []string{"list"}},
		{"list --json", []string{"list", "--json"}},
		{"describe", []string{"describe", fmt.Sprintf("bench-ext-%03d", count/2)}},
		{"describe --json", []string{"describe", fmt.Sprintf("bench-ext-%03d", count/2), "--json"}},
	} {
		times, rss, err := measure(append([]string{bin}, append(base, c.args...)...), nil, ws, n)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		report("gemkit "+c.name, times, rss)
	}
	if geminiN == 0 {
		return nil
	}
	gemini, err := geminiCommand(home)
	if err != nil {
		return err
	}
	env := []string{"HOME=" + home, "GEMINI_CLI_HOME=" + home, "GEMINI_API_KEY=x", "NO_COLOR=1", "PATH=" + os.Getenv("PATH")}
	for _, c := range []command{{"list", []string{"extensions", "list"}}, {"list -o json", []string{"extensions", "list", "-o", "json"}}} {
		times, rss, err := measure(append(gemini, c.args...), env, ws, geminiN)
		if err != nil {
			return fmt.Errorf("gemini %s: %w", c.name, err)
		}
		report("gemini "+c.name, times, rss)
	}
	return nil
}

func report(name string, times []time.Duration, rssKB int64) {
	fmt.Printf("%-23s p50 %7.1f ms   p90 %7.1f ms   min %7.1f ms   max RSS %4d MB\n", name, ms(pct(times, 50)), ms(pct(times, 90)), ms(times[0]), rssKB/1024)
}

// geminiCommand returns the command line that runs the real Gemini CLI
// from interop/node_modules offline: in a new network namespace with no
// interface up (unshare), with settings that skip sign-in and folder
// trust, written into the bench's home.
func geminiCommand(home string) ([]string, error) {
	bundle, err := filepath.Abs(filepath.Join("interop", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"))
	if err != nil {
		return nil, err
	}
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

// measure runs argv n times in dir (after one warm-up run), with env
// when not nil, and returns the sorted wall times and the largest peak
// resident memory (KB).
func measure(argv, env []string, dir string, n int) ([]time.Duration, int64, error) {
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if env != nil {
			cmd.Env = env
		}
		return cmd
	}
	if out, err := newCmd().CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("%v\n%s", err, out)
	}
	times := make([]time.Duration, 0, n)
	var rss int64
	for range n {
		cmd := newCmd()
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, 0, err
		}
		times = append(times, time.Since(start))
		rss = max(rss, peakRSS(cmd.ProcessState))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times, rss, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

// loadAverage returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
