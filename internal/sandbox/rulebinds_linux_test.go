package sandbox

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/sandbox/child"
)

// ruleBindsByScan is ruleBinds' cover rule as its definition: a rule is
// left out when a folder bound before it holds its path (fsutil.Within)
// and gives at least its access.
func ruleBindsByScan(binds []PathRule) (steps []child.Mount, done []PathRule) {
	for _, r := range binds {
		covered := false
		for _, d := range done {
			if !d.File && !d.ListOnly && fsutil.Within(d.Path, r.Path) && (d.Write || !r.Write) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if r.ListOnly {
			steps = append(steps, child.Mount{Kind: child.MountDir, Path: r.Path})
			continue
		}
		steps = append(steps, child.Mount{Kind: child.MountBind, Path: r.Path, Write: r.Write, File: r.File, Optional: r.Optional})
		done = append(done, r)
	}
	return steps, done
}

// TestRuleBindsCover: ruleBinds' look-up of the folders bound leaves out
// exactly the rules a comparison with every bind made leaves out, over
// random rule sets of one small tree: files, list-only folders, read and
// write at one path, a path given twice, unclean and relative paths.
func TestRuleBindsCover(t *testing.T) {
	paths := []string{"/a", "/a/b", "/a/b/c", "/a/bc", "/a/b/c/d", "/a//b/", "/a/b/../b/c", "/x", "/x/y", "rel", "rel/z", "/tmp/t", "/tmp/t/u"}
	rng := rand.New(rand.NewPCG(47, 1))
	for i := range 2000 {
		var rules []PathRule
		for range 1 + rng.IntN(10) {
			r := PathRule{Path: paths[rng.IntN(len(paths))], Write: rng.IntN(2) == 0}
			switch rng.IntN(5) {
			case 0:
				r.File = true
			case 1:
				r.ListOnly, r.Write = true, false
			}
			rules = append(rules, r)
		}
		steps, done := ruleBinds(rules, "/tmp/t")
		wantSteps, wantDone := ruleBindsByScan(bindOrder(rules, "/tmp/t"))
		if !reflect.DeepEqual(steps, wantSteps) || !reflect.DeepEqual(done, wantDone) {
			t.Fatalf("case %d: rules %+v:\nsteps %+v\nwant  %+v\ndone %+v\nwant %+v", i, rules, steps, wantSteps, done, wantDone)
		}
	}
}

// BenchmarkRuleBinds is ruleBinds over what a scope that reads everything
// but one closed folder gives on a machine whose /tmp holds n entries:
// each entry of each folder above the closed one is a rule of its own.
func BenchmarkRuleBinds(b *testing.B) {
	for _, n := range []int{50, 1000} {
		var rules []PathRule
		for _, top := range []string{"bin", "etc", "home", "lib", "opt", "root", "srv", "usr", "var"} {
			rules = append(rules, PathRule{Path: "/" + top})
		}
		for i := range n {
			rules = append(rules, PathRule{Path: fmt.Sprintf("/tmp/entry-%d", i)})
		}
		ws := "/tmp/world/home/ws"
		for d := ws; d != "/tmp"; d = filepath.Dir(d) {
			rules = append(rules, PathRule{Path: d, ListOnly: true})
		}
		rules = append(rules, PathRule{Path: ws, Write: true}, PathRule{Path: ws + "/sub"}, PathRule{Path: "/usr/lib"})
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				ruleBinds(rules, "/tmp/private")
			}
		})
	}
}
