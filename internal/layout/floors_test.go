package layout

import (
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gemkit/gemkit"

// imports are the module's packages and, for each, the module's
// packages it imports (tests' imports aside: they do not make floors).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		p := strings.TrimPrefix(f[0], module+"/")
		g[p] = nil
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				g[p] = append(g[p], rest)
			}
		}
	}
	return g
}

// within reports whether package p is in folder dir.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// TestFoldersConvex: for every folder holding packages, no package in
// it imports one outside that leads back in (a chain that leaves the
// folder and comes back), which is what an arrow from a lower floor to
// a higher one looks like. internal/ itself is Go's boundary of what
// other modules may import, not a floor: its rooms are checked, not it.
func TestFoldersConvex(t *testing.T) {
	g := imports(t)
	dirs := map[string]bool{}
	for p := range g {
		for d := p; d != "." && d != ""; d = path.Dir(d) {
			dirs[d] = d != "internal"
		}
	}
	// reaches[p] is every package p leads to, itself included.
	reaches := map[string]map[string]bool{}
	var walk func(string) map[string]bool
	walk = func(p string) map[string]bool {
		if r, ok := reaches[p]; ok {
			return r
		}
		r := map[string]bool{p: true}
		reaches[p] = r // the graph has no cycles (Go refuses them)
		for _, q := range g[p] {
			for x := range walk(q) {
				r[x] = true
			}
		}
		return r
	}
	var bad []string
	for d, room := range dirs {
		if !room {
			continue
		}
		for p, imps := range g {
			if !within(p, d) {
				continue
			}
			for _, q := range imps {
				if within(q, d) {
					continue
				}
				for x := range walk(q) {
					if within(x, d) {
						bad = append(bad, d+": "+p+" → "+q+" → … → "+x)
						break
					}
				}
			}
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Errorf("a chain of imports leaves the folder and comes back: %s", b)
	}
}

// TestIDEIsTheFloor: the package ide imports nothing of the module, and
// nothing under ide/ imports a package that the companion, the client or
// the conformance checker is built from.
func TestIDEIsTheFloor(t *testing.T) {
	g := imports(t)
	if len(g["ide"]) != 0 {
		t.Errorf("ide imports %v; it is the floor the rest stands on", g["ide"])
	}
	for p, imps := range g {
		if !within(p, "ide") {
			continue
		}
		for _, q := range imps {
			for _, room := range []string{"companion", "client", "conformance", "internal/cli", "internal/agent"} {
				if within(q, room) {
					t.Errorf("%s imports %s, a floor above it", p, q)
				}
			}
		}
	}
}
