//go:build linux

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
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/proc"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/toolrun"
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
	// The server's row has a workspace of its own: the placeholders it
	// keeps between runs must not be the ones bwrap's rows remove.
	serverWS := filepath.Join(root, "ws-server")
	for _, d := range []string{ws, ext, tmp, serverWS} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	home, _ := os.UserHomeDir()
	policy := sandbox.Policy{Read: permission.AccessWorkspace, Write: permission.AccessWorkspace, Workspace: ws, Home: home, ExtensionDir: ext, TempDir: tmp}
	// The protected paths a write: workspace tool gets, all absent in
	// this fresh workspace: each run makes and removes a placeholder for
	// every one and binds it read-only, the most such a run does (but
	// gemkit-server's, which keeps them).
	policy.Guarded = permission.GuardedPaths(policy.Write, ws, home)
	withHosts := policy
	withHosts.AllowedHosts = []string{"api.example.com"}
	server := policy
	server.Workspace = serverWS
	server.Guarded = permission.GuardedPaths(server.Write, serverWS, home)
	// As gemkit mcp runs its tools: the placeholders stay between runs.
	serverLauncher := &sandbox.Launcher{Exe: exe, Linger: 2 * time.Second}
	defer serverLauncher.Close()
	tool := "/bin/true"
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}

	runSandbox := func(l *sandbox.Launcher, p sandbox.Policy) func(context.Context) error {
		return func(ctx context.Context) error {
			proc, err := l.Start(ctx, &sandbox.Command{Policy: p, Path: tool, Env: env, Dir: p.Workspace})
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
		{"gemkit-mntns", "re-exec + user/net/pid/ipc/mount namespaces (own root of binds, tmpfs temp dir, /proc, /dev) + Landlock + seccomp", runSandbox(&sandbox.Launcher{Exe: exe, NoCgroup: true}, policy)},
		{"gemkit-memcg", "as gemkit-mntns + a memory cgroup for the tree where one can be made (else RLIMIT_DATA per process)", runSandbox(&sandbox.Launcher{Exe: exe}, policy)},
		{"gemkit-proxy", "as gemkit-memcg + loopback up, listener passed out, proxy started", runSandbox(&sandbox.Launcher{Exe: exe}, withHosts)},
		{"gemkit-server", "as gemkit-memcg, the placeholders kept between runs (Launcher.Linger), as gemkit mcp runs a client's calls", runSandbox(serverLauncher, server)},
	}
	toolRun, err := toolRunMode(root, ws, exe)
	if err != nil {
		return err
	}
	modes = append(modes, toolRun)
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		bwModes, err := bwrapModes(bwrap, root, ws, tool, env, policy)
		if err != nil {
			return err
		}
		modes = append(modes, bwModes...)
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

	printModes(modes, samples, n, tool, exe)
	return nil
}

// printModes prints each mode's spawn-to-exit figures and its overhead
// over the first, direct, mode.
func printModes(modes []mode, samples [][]time.Duration, n int, tool, exe string) {
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
	fmt.Println("targets: overhead p50 <= 15 ms with network isolation, <= 5 ms without (gemkit-fs); gemkit-mntns no worse than bwrap-mntns, gemkit-memcg no worse than bwrap-memcg")
}

// bwrapModes are the reference rows: bwrap building the very view
// gemkit builds (sandbox.RootPlan), without and with a memory cgroup.
func bwrapModes(bwrap, root, ws, tool string, env []string, policy sandbox.Policy) ([]mode, error) {
	memRoot := memoryCgroup()
	// bwrap builds the very view gemkit builds: the same steps.
	plan, err := sandbox.RootPlan(&sandbox.Command{Policy: policy, Path: tool, Env: env, Dir: ws})
	if err != nil {
		return nil, err
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o555); err != nil {
		return nil, err
	}
	binds, placeholders := bwrapArgs(plan, empty)
	binds = append(binds, "--chdir", ws, "--die-with-parent", "--cap-drop", "ALL", "--new-session")
	bw := func(memcg bool, extra ...string) func(context.Context) error {
		args := append(append(append([]string{}, extra...), binds...), tool)
		return func(ctx context.Context) error {
			// bwrap leaves the mount points it made for absent
			// protected paths on the host: removed after each run,
			// as sandbox-runtime does and gemkit does.
			defer func() {
				for _, p := range placeholders {
					_ = os.Remove(p)
				}
			}()
			cmd := exec.CommandContext(ctx, bwrap, args...)
			cmd.Env = env
			if !memcg || memRoot == "" {
				return cmd.Run()
			}
			return runInMemcg(cmd, memRoot)
		}
	}
	ns := []string{"--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc"}
	return []mode{
		{"bwrap-mntns", "bwrap: user + mount + net + pid + ipc namespaces, the very root gemkit builds (sandbox.RootPlan)", bw(false, ns...)},
		{"bwrap-memcg", "as bwrap-mntns + a v1 memory cgroup made per run (root only; else as bwrap-mntns)", bw(true, ns...)},
	}, nil
}

// runInMemcg runs cmd in a memory cgroup of its own under memRoot, made
// for the run as gemkit makes its own.
func runInMemcg(cmd *exec.Cmd, memRoot string) error {
	// The same memory bound, made the same way: a cgroup
	// per run, the process moved in, removed after.
	dir := filepath.Join(memRoot, fmt.Sprintf("gemkit-bench-%d", time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	// Removed as gemkit removes its own: the kernel may take a
	// moment to release a group whose last process just died.
	defer func() {
		for try := 0; try < 1000 && os.Remove(dir) != nil; try++ {
			time.Sleep(time.Millisecond)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte("2147483648"), 0); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0)
	return cmd.Wait()
}

// toolRunMode is a whole tool call as `gemkit extensions run` makes it
// (toolrun.Runner.Run): an installed extension of a few files, its
// settings file, consent on record checked against the digest of its
// files, the script found in its folder, the policy resolved, then the
// sandbox as in gemkit-memcg running `sh` on a script that exits at once.
// Against gemkit-memcg it shows what gemkit does around the sandbox on
// each call, reading the extension's tree among it.
func toolRunMode(root, ws, exe string) (mode, error) {
	home, src := filepath.Join(root, "home"), filepath.Join(root, "src")
	files := map[string]string{
		extension.ManifestFile: `{"name": "bench-noop", "version": "1.0.0", "settings": [{"name": "Key", "envVar": "BENCH_KEY"}],
  "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}},
  "tools": [{"name": "noop", "description": "Does nothing.", "executable": "tools/noop.sh", "runtime": "shell"}],
  "docs": [{"name": "usage", "file": "docs/usage.md"}]}`,
		"tools/noop.sh": "exit 0\n",
		"docs/usage.md": "# Usage\n",
		"GEMINI.md":     "Context.\n",
		"README.md":     "A tool that does nothing.\n",
	}
	for i := range 12 {
		files[fmt.Sprintf("tools/lib/mod%02d.sh", i)] = strings.Repeat("# a library line of a tool\n", 40)
	}
	for name, data := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return mode{}, err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return mode{}, err
		}
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
		return mode{}, err
	}
	in, err := st.Get("bench-noop")
	if err != nil {
		return mode{}, err
	}
	if err := os.WriteFile(filepath.Join(in.Entry, ".env"), []byte("BENCH_KEY=value\n"), 0o600); err != nil {
		return mode{}, err
	}
	runner := &toolrun.Runner{
		Launcher:  &sandbox.Launcher{Exe: exe},
		Consent:   st,
		Installed: st,
		Environ:   []string{"PATH=/usr/bin:/bin", "HOME=" + home},
	}
	return mode{"toolrun", "a whole tool call (its settings file read, toolrun.Runner.Run: consent digest of 17 files, script, policy) around gemkit-memcg running sh", func(ctx context.Context) error {
		settings, err := toolrun.InstalledSettings(in)
		if err != nil {
			return err
		}
		_, err = runner.Run(ctx, toolrun.Call{Extension: in.Extension, Tool: "noop", Workspace: ws, Settings: settings, GrantConsent: true})
		return err
	}}, nil
}

// bwrapArgs turns gemkit's root-building steps into bwrap's options. An
// absent protected path becomes a read-only bind of /dev/null (a file) or
// of the empty folder empty, over a mount point bwrap creates on the host,
// as sandbox-runtime does; those are returned for removal.
func bwrapArgs(plan []child.Mount, empty string) (args, placeholders []string) {
	for _, m := range plan {
		switch m.Kind {
		case child.MountBind:
			if _, err := os.Lstat(m.Path); err != nil && !m.Write && !m.Optional && !m.Device {
				src := empty
				if m.File {
					src = "/dev/null"
				}
				args = append(args, "--ro-bind", src, m.Path)
				placeholders = append(placeholders, m.Path)
				continue
			}
			switch {
			case m.Device:
				args = append(args, "--dev-bind", m.Path, m.Path)
			case m.Write:
				args = append(args, "--bind", m.Path, m.Path)
			case m.Optional:
				args = append(args, "--ro-bind-try", m.Path, m.Path)
			default:
				args = append(args, "--ro-bind", m.Path, m.Path)
			}
		case child.MountDir:
			args = append(args, "--dir", m.Path)
		case child.MountSymlink:
			args = append(args, "--symlink", m.Target, m.Path)
		case child.MountTmpfs:
			args = append(args, "--size", fmt.Sprint(m.Size), "--tmpfs", m.Path)
		case child.MountProc:
			args = append(args, "--proc", m.Path)
		}
	}
	return args, placeholders
}

// memoryCgroup is this process's v1 memory cgroup folder when it may
// create cgroups there, for the bubblewrap reference; "" otherwise.
func memoryCgroup() string {
	own, err := proc.Cgroups(os.Getpid())
	if err != nil || own["memory"] == "" {
		return ""
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", own["memory"])
	probe := filepath.Join(dir, "gemkit-bench-probe")
	if os.Mkdir(probe, 0o755) != nil {
		return ""
	}
	os.Remove(probe)
	return dir
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
