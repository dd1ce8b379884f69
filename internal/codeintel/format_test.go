package codeintel

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// sortLocationsByPath is sortLocations as it was first written (each
// location keyed by its path, the keys sorted): the reference the faster
// one is checked and measured against.
func sortLocationsByPath(w where, locs []Location) []Location {
	type keyed struct {
		l      Location
		inside bool
		file   string
	}
	ks := make([]keyed, len(locs))
	inside := map[string]bool{}
	for i, l := range locs {
		in, ok := inside[l.Path]
		if !ok {
			_, in = w.rel(l.Path)
			inside[l.Path] = in
		}
		ks[i] = keyed{l, in, l.Path + l.URI}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.inside != b.inside {
			if a.inside {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.file, b.file),
			cmp.Compare(a.l.Range.Start.Line, b.l.Range.Start.Line),
			cmp.Compare(a.l.Range.Start.Character, b.l.Range.Start.Character))
	})
	out := make([]Location, len(ks))
	for i, k := range ks {
		out[i] = k.l
	}
	return slices.CompactFunc(out, func(a, b Location) bool {
		return a.Path == b.Path && a.URI == b.URI && a.Range.Start == b.Range.Start
	})
}

// randomLocations are n locations in and out of the workspace ws, some
// by URI only, with duplicates, in no order.
func randomLocations(r *rand.Rand, ws string, n int) []Location {
	files := []Location{
		{Path: filepath.Join(ws, "main.go")}, {Path: filepath.Join(ws, "a", "b.go")}, {Path: filepath.Join(ws, "a.go")},
		{Path: "/usr/local/go/src/fmt/print.go"}, {Path: "/root/go/pkg/mod/x@v1/y.go"},
		{URI: "jdt://contents/String.class"}, {URI: "untitled:Untitled-1"},
	}
	out := make([]Location, n)
	for i := range out {
		l := files[r.IntN(len(files))]
		line, char := r.IntN(6), r.IntN(4)
		l.Range = Range{Start: Position{Line: line, Character: char}, End: Position{Line: line + r.IntN(2), Character: char + r.IntN(9)}}
		out[i] = l
	}
	return out
}

// startsOf is what an answer shows of sorted locations: file and start.
func startsOf(locs []Location) []string {
	var out []string
	for _, l := range locs {
		out = append(out, fmt.Sprintf("%s|%s|%d:%d", l.Path, l.URI, l.Range.Start.Line, l.Range.Start.Character))
	}
	return out
}

func TestSortLocations(t *testing.T) {
	ws := t.TempDir()
	root, err := fsutil.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := where{root: root, goRoots: &sync.Map{}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		for range 20 {
			locs := randomLocations(r, ws, n)
			in := slices.Clone(locs)
			got, want := w.sortLocations(locs), sortLocationsByPath(w, locs)
			if !slices.Equal(startsOf(got), startsOf(want)) {
				t.Fatalf("%d locations: got\n%s\nwant\n%s", n, strings.Join(startsOf(got), "\n"), strings.Join(startsOf(want), "\n"))
			}
			if !slices.Equal(locs, in) {
				t.Fatal("sortLocations changed its argument")
			}
			files := map[string]bool{}
			for _, l := range got {
				files[l.Path+l.URI] = true
			}
			if c := countFiles(got); c != len(files) {
				t.Fatalf("countFiles = %d, want %d", c, len(files))
			}
		}
	}
}

// manyReferences writes the benchmark's workspace: the shop with 20
// packages of 5 files of 10 functions, each calling greet.Greet, and
// returns gopls's answer for the references of greet.Greet (the
// declaration, then each use), in the order gopls gave them.
func manyReferences(t testing.TB) (string, []Location) {
	ws := codeinteltest.Fixture(t, "go")
	g := filepath.Join(ws, "greet", "greet.go")
	locs := []Location{{Path: filepath.Join(ws, "main.go"), Range: rng(14, 19, 24)}, {Path: g, Range: rng(15, 5, 10)}}
	for p := range 20 {
		dir := filepath.Join(ws, "gen", fmt.Sprintf("p%02d", p))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 5 {
			var s strings.Builder
			fmt.Fprintf(&s, "package p%02d\n\nimport \"example.com/shop/greet\"\n\n", p)
			file := filepath.Join(dir, fmt.Sprintf("f%d.go", f))
			for i := range 10 {
				fmt.Fprintf(&s, "func F%d_%d() string { return greet.Greet(\"v\") }\n\n", f, i)
				locs = append(locs, Location{Path: file, Range: rng(4+2*i, 38, 43)})
			}
			if err := os.WriteFile(file, []byte(s.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// gopls answers file by file, its packages in no set order.
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(locs), func(i, j int) { locs[i], locs[j] = locs[j], locs[i] })
	return ws, locs
}

// The answer to a thousand references: 50 kept, the rest counted, with
// the number of files they are in.
func TestReferencesMany(t *testing.T) {
	ws, locs := manyReferences(t)
	g := filepath.Join(ws, "greet", "greet.go")
	tools := newTestTools(t, ws, &fakeSource{refs: map[DocPos][]Location{{Path: g, Pos: Position{Line: 15, Character: 5}}: locs}}, Options{})
	got, isErr := call(t, tools, ToolReferences, `{"file":"greet/greet.go","line":16,"column":6}`)
	if isErr {
		t.Fatal(got)
	}
	want := []string{
		"1002 references to greet/greet.go:16:6 (its declaration included), in 102 files:",
		"gen/p00/f0.go\n  5:39: func F0_0() string { return greet.Greet(\"v\") }\n",
		"gen/p00/f4.go\n  5:39: func F4_0() string { return greet.Greet(\"v\") }\n",
		"[952 more not shown in 97 files: ask about",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the answer lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "gen/p01/") || strings.Contains(got, "main.go") {
		t.Errorf("the answer shows more than 50:\n%s", got)
	}
}

// BenchmarkSortLocations: a thousand references in 102 files, sorted
// the way first written and the way now.
func BenchmarkSortLocations(b *testing.B) {
	ws, locs := manyReferences(b)
	root, err := fsutil.OpenRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	w := where{root: root, goRoots: &sync.Map{}}
	b.Run("by-path", func(b *testing.B) {
		for b.Loop() {
			sortLocationsByPath(w, locs)
		}
	})
	b.Run("ranked", func(b *testing.B) {
		for b.Loop() {
			w.sortLocations(locs)
		}
	})
}

// BenchmarkReferencesAnswer: the answer to a thousand references, from
// the Source's locations to the text (sort, count, the 50 kept with
// their source lines).
func BenchmarkReferencesAnswer(b *testing.B) {
	ws, locs := manyReferences(b)
	g := filepath.Join(ws, "greet", "greet.go")
	tools, err := NewTools(&fakeSource{refs: map[DocPos][]Location{{Path: g, Pos: Position{Line: 15, Character: 5}}: locs}}, ws, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tools.Close()
	args := json.RawMessage(`{"file":"greet/greet.go","line":16,"column":6}`)
	b.ReportAllocs()
	for b.Loop() {
		if text, isErr := tools.Call(context.Background(), ToolReferences, args); isErr {
			b.Fatal(text)
		}
	}
}

// where.rel's shortcut for clean paths agrees with fsutil.Rel.
func TestRel(t *testing.T) {
	ws := t.TempDir()
	root, err := fsutil.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := where{root: root, goRoots: &sync.Map{}}
	for _, p := range []string{ws, ws + "/", ws + "/a.go", ws + "/a/b.go", ws + "/a/", ws + "//a.go", ws + "/./a.go", ws + "/a/../b.go",
		ws + "/../x.go", ws + "/..", ws + "/.", ws + "x/a.go", ws + "/..a/b.go", ws + "/a./b", "/usr/local/go/src/fmt/print.go", "", "a.go"} {
		got, gotOK := w.rel(p)
		want, wantOK := fsutil.Rel(ws, p)
		want = filepath.ToSlash(want)
		if !wantOK {
			want = p
		}
		if got != want || gotOK != wantOK {
			t.Errorf("rel(%q) = %q, %v; want %q, %v", p, got, gotOK, want, wantOK)
		}
	}
}
