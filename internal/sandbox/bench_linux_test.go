package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

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
