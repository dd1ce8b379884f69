// Command sandbox measures what the tool sandbox costs: spawn-to-exit of a
// trivial tool (/bin/true) run directly, under gemkit's sandbox in each of
// its configurations, and under bubblewrap doing the same isolation, all
// interleaved in one run so that they see the same machine load.
//
//	go run ./bench/sandbox [-n 300] [-gemkit path/to/gemkit]
//
// bench/sandbox/run.sh builds gemkit and runs this as root and as an
// unprivileged user.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
)

type mode struct {
	name string
	note string
	run  func(ctx context.Context) error
}

func main() {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	n := flag.Int("n", 300, "iterations per mode")
	exe := flag.String("gemkit", "", "gemkit binary to re-execute as the sandbox child (default: this program, which has the same hook)")
	flag.Parse()
	if err := bench(*n, *exe); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func bench(n int, exe string) error {
	root, err := os.MkdirTemp("", "gemkit-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ws, ext, tmp := filepath.Join(root, "ws"), filepath.Join(root, "ext"), filepath.Join(root, "tmp")
	for _, d := range []string{ws, ext, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	home, _ := os.UserHomeDir()
	policy := sandbox.Policy{Read: extension.AccessWorkspace, Write: extension.AccessWorkspace, Workspace: ws, Home: home, ExtensionDir: ext, TempDir: tmp}
	withHosts := policy
	withHosts.AllowedHosts = []string{"api.example.com"}
	tool := "/bin/true"
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}

	runSandbox := func(l *sandbox.Launcher, p sandbox.Policy) func(context.Context) error {
		return func(ctx context.Context) error {
			proc, err := l.Start(ctx, &sandbox.Command{Policy: p, Path: tool, Env: env, Dir: ws})
			if err != nil {
				return err
			}
			return proc.Wait()
		}
	}
	direct := func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, tool)
		cmd.Env, cmd.Dir = env, ws
		return cmd.Run()
	}
	modes := []mode{
		{"direct", "exec of /bin/true, no sandbox (baseline)", direct},
		{"gemkit-fs", "re-exec + Landlock + seccomp (sockets refused), no namespaces", runSandbox(&sandbox.Launcher{NoNamespaces: true, Exe: exe}, policy)},
		{"gemkit-netns", "re-exec + user/net/pid/ipc namespaces + Landlock + seccomp", runSandbox(&sandbox.Launcher{Exe: exe}, policy)},
		{"gemkit-proxy", "as gemkit-netns + loopback up, listener passed out, proxy started", runSandbox(&sandbox.Launcher{Exe: exe}, withHosts)},
	}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		binds := []string{"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
			"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
			"--ro-bind", ext, ext, "--bind", ws, ws, "--bind", tmp, tmp, "--dev", "/dev", "--chdir", ws, "--die-with-parent"}
		bw := func(extra ...string) func(context.Context) error {
			args := append(append(append([]string{}, extra...), binds...), tool)
			return func(ctx context.Context) error {
				cmd := exec.CommandContext(ctx, bwrap, args...)
				cmd.Env = env
				return cmd.Run()
			}
		}
		modes = append(modes,
			mode{"bwrap-fs", "bwrap: user + mount namespace with the same binds (its fs isolation)", bw("--unshare-user")},
			mode{"bwrap-netns", "bwrap: user + mount + net + pid + ipc namespaces", bw("--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc")},
		)
	} else {
		fmt.Fprintln(os.Stderr, "bwrap not found (apt-get install bubblewrap): reference rows skipped")
	}

	ctx := context.Background()
	samples := make([][]time.Duration, len(modes))
	for i := 0; i < n+10; i++ {
		for j, m := range modes {
			start := time.Now()
			if err := m.run(ctx); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if i >= 10 { // warm-up rounds are not counted
				samples[j] = append(samples[j], time.Since(start))
			}
		}
	}

	child := exe
	if child == "" {
		child = "this bench binary"
	}
	fmt.Printf("sandbox spawn-to-exit of %s, %d runs per mode, interleaved; %s/%s, %d CPUs, uid %d, Landlock ABI %d; child: %s\n\n",
		tool, n, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), os.Getuid(), sandbox.LandlockABI(), child)
	fmt.Printf("%-13s %9s %9s %9s %12s  %s\n", "mode", "p50", "p90", "mean", "overhead p50", "what")
	base := pct(samples[0], 50)
	for j, m := range modes {
		s := samples[j]
		over := "-"
		if j > 0 {
			over = ms(pct(s, 50) - base)
		}
		fmt.Printf("%-13s %9s %9s %9s %12s  %s\n", m.name, ms(pct(s, 50)), ms(pct(s, 90)), ms(mean(s)), over, m.note)
	}
	fmt.Println()
	fmt.Println("targets: overhead p50 <= 15 ms with network isolation (gemkit-netns, gemkit-proxy), <= 5 ms without (gemkit-fs)")
	return nil
}

func pct(s []time.Duration, p int) time.Duration {
	c := append([]time.Duration(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[(len(c)-1)*p/100]
}

func mean(s []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range s {
		t += d
	}
	return t / time.Duration(len(s))
}

func ms(d time.Duration) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)), "0"), ".") + " ms"
}
