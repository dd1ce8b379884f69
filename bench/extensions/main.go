// Command extensions measures `gemkit extensions list` and `describe` as a
// person meets them: the whole process, started afresh each time, with
// 200 extensions installed. It builds gemkit, fills a temporary home with
// real installs (the "tools" template: three tools, a doc, examples,
// context file), runs each command N times and prints p50 and p90.
//
//	go run ./bench/extensions [-n 50] [-extensions 200]
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
	flag.Parse()
	if err := run(*n, *count); err != nil {
		log.Fatal(err)
	}
}

func run(n, count int) error {
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
	for _, c := range []struct {
		name string
		args []string
	}{
		{"list", []string{"list"}},
		{"list --json", []string{"list", "--json"}},
		{"describe", []string{"describe", fmt.Sprintf("bench-ext-%03d", count/2)}},
		{"describe --json", []string{"describe", fmt.Sprintf("bench-ext-%03d", count/2), "--json"}},
	} {
		times, err := measure(bin, append(base, c.args...), n)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("%-16s p50 %6.1f ms   p90 %6.1f ms   min %6.1f ms\n", c.name, ms(pct(times, 50)), ms(pct(times, 90)), ms(times[0]))
	}
	return nil
}

// measure runs the command n times (after one warm-up run) and returns the
// sorted wall times.
func measure(bin string, args []string, n int) ([]time.Duration, error) {
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, out)
	}
	times := make([]time.Duration, 0, n)
	for range n {
		cmd := exec.Command(bin, args...)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times, nil
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
