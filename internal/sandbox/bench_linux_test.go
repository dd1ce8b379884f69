package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/permission"
)

// BenchmarkRules is the parent's share of a run: computing the Landlock
// rules from the permissions.
func BenchmarkRules(b *testing.B) {
	w := newWorld(b)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	for b.Loop() {
		if _, err := p.Rules(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerPlan is what gemkit does for an extension's MCP server
// before the sandbox's child runs (issue 45's cold start): the server's
// profile (its program found on the person's PATH, the closed places),
// the rules of its policy (sealed, as a server's are, in namespaces) and
// the child's spec, encoded. The program is node in the extension's
// folder's place, with this machine's PATH and a home like a person's.
func BenchmarkServerPlan(b *testing.B) {
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node on PATH: the server planned is node's (scripts/setup-and-test installs Node 20, as CI does)")
	}
	w := newWorld(b)
	data := filepath.Join(w.root, "extension-data", "ext")
	if err := os.MkdirAll(data, 0o700); err != nil {
		b.Fatal(err)
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": w.home}
	ns := nsAttempt{flags: unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS | unix.CLONE_NEWUSER, userns: true}
	for b.Loop() {
		pr, err := NewServerProfile(ServerSetup{Workspace: w.ws, Env: env, Program: "node", AbsoluteIn: w.ext, Own: w.ext,
			Private: data, What: "its data folder", Moved: "HOME", ExtensionFolders: []string{w.ext}})
		if err != nil {
			b.Fatal(err)
		}
		pr.ReportRefusals, pr.OwnProcesses, pr.NoPreallocate = true, true, true
		pr.Finish()
		c := &Command{Policy: pr.Policy(w.ws, w.tmp), Path: pr.Path, Dir: w.ws, Env: pr.Env}
		rules, overlays, sealed, err := c.Policy.sealedRules()
		if err != nil {
			b.Fatal(err)
		}
		enf := enforcement(c, 7, ns)
		pl := &runPlan{rules: rules, overlays: overlays, sealed: sealed, root: planRoot(c, rules, overlays)}
		spec, _, err := childSpec(c, false, pl, &enf)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := spec.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStart is spawn-to-exit of /bin/true in the sandbox, from the
// test binary (see bench/sandbox for the comparison with a direct exec
// and bwrap).
func BenchmarkStart(b *testing.B) {
	w := newWorld(b)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				proc, err := m.l.Start(context.Background(), &Command{Policy: p, Path: "/bin/true", Dir: w.ws})
				if err != nil {
					b.Fatal(err)
				}
				if err := proc.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlaceholders is a run's placeholder work without Linger:
// holding thirty absent protected names of a workspace (lock, make the
// placeholder) and giving them back (remove it, and its lock file).
func BenchmarkPlaceholders(b *testing.B) {
	w := newWorld(b)
	l := &Launcher{LockDir: filepath.Join(b.TempDir(), "locks")}
	var overlays []overlay
	for i := range 30 {
		overlays = append(overlays, overlay{path: filepath.Join(w.ws, fmt.Sprintf(".guarded-%d", i)), guarded: true, absent: true, dir: i%2 == 0})
	}
	for b.Loop() {
		held, err := l.hold(slices.Clone(overlays))
		if err != nil {
			b.Fatal(err)
		}
		l.release(held)
	}
}

// BenchmarkStartReporting is BenchmarkStart's run with namespaces and no
// network beside the same run with a host allowed (the proxy) and with
// ReportRefusals (the deny-all proxy and the resolver, as every
// extension's MCP server gets them), in one run: what reporting adds to
// a start.
func BenchmarkStartReporting(b *testing.B) {
	w := newWorld(b)
	l := &Launcher{}
	for _, c := range []struct {
		name   string
		hosts  []string
		report bool
	}{{"none", nil, false}, {"proxy", []string{"example.com"}, false}, {"report", nil, true}} {
		p := w.policy(permission.AccessWorkspace, permission.AccessNone, c.hosts...)
		p.ReportRefusals = c.report
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				proc, err := l.Start(context.Background(), &Command{Policy: p, Path: "/bin/true", Dir: w.ws})
				if err != nil {
					b.Fatal(err)
				}
				if err := proc.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWatchedCreates is what the watch of a server's writes costs a
// call that creates a file: a server (Python) creates and closes files
// with open(O_CREAT), timing each itself, in its temporary folder without
// the watch (the reference) and with it (the call is handed to gemkit,
// which lets it go on), and in a sealed workspace (gemkit makes the file
// and hands the server its descriptor), beside the same workspace with
// placeholders and no watch. One op is 200 creates; the metric is the
// time of one, as the server saw it.
func BenchmarkWatchedCreates(b *testing.B) {
	python := "/usr/bin/python3"
	script := `
import os, sys, time
d, n = sys.argv[1], 200
for line in sys.stdin:
    t = time.perf_counter()
    for i in range(n):
        os.close(os.open(os.path.join(d, "f%d" % i), os.O_CREAT|os.O_WRONLY|os.O_TRUNC, 0o644))
    for i in range(n):
        os.unlink(os.path.join(d, "f%d" % i))
    print((time.perf_counter() - t) / n * 1e6, flush=True)
`
	for _, c := range []struct {
		name    string
		watched bool
		ws      bool
	}{{"temp", false, false}, {"temp/watched", true, false}, {"workspace/placeholders", false, true}, {"workspace/sealed", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			w := newWorld(b)
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			p.ReportRefusals = c.watched
			p.Guarded = permission.GuardedPaths(permission.AccessWorkspace, w.ws, w.home)
			dir := w.tmp
			if c.ws {
				dir = w.ws
			}
			l := &Launcher{}
			defer l.Close()
			srv, err := l.StartServer(context.Background(), &Command{Policy: p, Path: python, Args: []string{"-c", script, dir},
				Env: []string{"PATH=/usr/bin:/bin", "HOME=" + w.tmp}, Dir: w.ws})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { srv.Kill(); srv.Wait() }()
			out := bufio.NewReader(srv.Stdout)
			var sum float64
			for b.Loop() {
				fmt.Fprintln(srv.Stdin, "go")
				line, err := out.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				var us float64
				fmt.Sscanf(line, "%g", &us)
				sum += us
			}
			b.ReportMetric(sum/float64(b.N), "µs/create")
		})
	}
}
