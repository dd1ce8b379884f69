package codeintel

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// answer builds one tool's text within a budget of characters: lines
// past it are counted, not written, and the last line says how many were
// left out and how to narrow the question.
type answer struct {
	b       strings.Builder
	budget  int
	omitted int // items left out
	files   map[string]bool
	full    bool
}

func newAnswer(budget int) *answer { return &answer{budget: budget, files: map[string]bool{}} }

// line writes one line, or counts it as left out once the budget is
// spent. file, when not "", is the file the item is in (to count the
// files left out).
func (a *answer) line(file, s string) {
	if a.full || a.b.Len()+len(s)+1 > a.budget {
		a.full = true
		a.omitted++
		if file != "" {
			a.files[file] = true
		}
		return
	}
	a.b.WriteString(s)
	a.b.WriteByte('\n')
}

// skip counts n items left out by a count limit.
func (a *answer) skip(n int, file string) {
	a.omitted += n
	if file != "" && n > 0 {
		a.files[file] = true
	}
}

// text ends the answer: what was left out, and how to see it.
func (a *answer) text(narrow string) string {
	s := a.b.String()
	if a.omitted > 0 {
		files := ""
		if n := len(a.files); n > 0 {
			files = fmt.Sprintf(" in %d %s", n, plural(n, "file", "files"))
		}
		s += fmt.Sprintf("[%d more not shown%s", a.omitted, files)
		if narrow != "" {
			s += ": " + narrow
		}
		s += "]\n"
	}
	return strings.TrimRight(s, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// where formats paths for a model: relative to the workspace (with /),
// or, outside it, absolute with what the file belongs to.
type where struct {
	root *fsutil.Root
	// goRoots caches which folders are Go installations (path → bool).
	goRoots *sync.Map
}

// rel is p relative to the workspace, and whether it lies in it.
func (w where) rel(p string) (string, bool) {
	// A clean path below the workspace, as servers name files, is told
	// by its start: fsutil.Rel cleans both paths first, which costs a
	// microsecond or two for each of the hundred files of a thousand
	// references.
	if r, ok := strings.CutPrefix(p, w.root.Dir()); ok && len(r) > 1 && r[0] == filepath.Separator && cleanBelow(r[1:]) {
		return filepath.ToSlash(r[1:]), true
	}
	r, ok := fsutil.Rel(w.root.Dir(), p)
	if !ok {
		return p, false
	}
	return filepath.ToSlash(r), true
}

// cleanBelow reports whether r, a path relative to a folder, is clean
// and below it: no empty, "." or ".." element.
func cleanBelow(r string) bool {
	for r != "" {
		e, rest, found := strings.Cut(r, string(filepath.Separator))
		if e == "" || e == "." || e == ".." || (found && rest == "") {
			return false
		}
		r = rest
	}
	return true
}

// file is how a path is shown: relative in the workspace, else the
// absolute path followed by " (outside the workspace: …)".
func (w where) file(p string) string {
	if r, ok := w.rel(p); ok {
		return r
	}
	return p
}

// outsideNote is " [outside the workspace: …]" for a path outside the
// workspace, "" for one in it.
func (w where) outsideNote(p string) string {
	if _, ok := w.rel(p); ok || p == "" {
		return ""
	}
	if what := w.outsideKind(p); what != "" {
		return " [outside the workspace: " + what + "]"
	}
	return " [outside the workspace]"
}

// quoteNote is " [not quoted: why]" for a file whose text an answer
// does not show (Quoting), "" for one it shows: it follows the name of a
// file on a line that would otherwise quote it.
func (w where) quoteNote(fc *fileCache, p string) string {
	if why, held := fc.withheld(p); held {
		return " [" + why + "]"
	}
	return ""
}

// locName is path:line:col of a location (1-based line and character
// column, from the file's text when it can be read).
func (w where) locName(fc *fileCache, l Location) string {
	if l.Path == "" {
		return fmt.Sprintf("%s:%d:%d", l.URI, l.Range.Start.Line+1, l.Range.Start.Character+1)
	}
	ls, _ := fc.get(l.Path)
	col := runeCol(ls.line(l.Range.Start.Line), l.Range.Start.Character)
	return fmt.Sprintf("%s:%d:%d", w.file(l.Path), l.Range.Start.Line+1, col+1)
}

// srcLine is the (clipped) source line a location starts on, or "".
func srcLine(fc *fileCache, l Location) string {
	if l.Path == "" {
		return ""
	}
	ls, err := fc.get(l.Path)
	if err != nil {
		return ""
	}
	return clipLine(ls.line(l.Range.Start.Line))
}

// sortLocations orders locations by workspace first, then path, line and
// column, and drops duplicates. Each file is placed once (whether it lies
// in the workspace, and its rank among the files), so that a thousand
// references in a hundred files are sorted by comparing a hundred paths,
// not by comparing paths ten thousand times (a third of a millisecond).
func (w where) sortLocations(locs []Location) []Location {
	type file struct{ path, uri string }
	type fileInfo struct {
		f      file
		inside bool
		name   string // its path or URI, by which it is sorted
	}
	index := map[file]int{} // file → its place in files
	var files []fileInfo
	fileOf := make([]int32, len(locs))
	last, lastAt := file{}, -1
	for i, l := range locs {
		f := file{l.Path, l.URI}
		if lastAt < 0 || f != last {
			at, ok := index[f]
			if !ok {
				at = len(files)
				index[f] = at
				_, in := w.rel(l.Path)
				files = append(files, fileInfo{f, in, l.Path + l.URI})
			}
			last, lastAt = f, at
		}
		fileOf[i] = int32(lastAt)
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		fa, fb := files[a], files[b]
		if fa.inside != fb.inside {
			if fa.inside {
				return -1
			}
			return 1
		}
		return strings.Compare(fa.name, fb.name)
	})
	// The locations file by file, in the files' order (a counting
	// sort), then each file's by line and column: a few each, often in
	// order already.
	count := make([]int, len(files))
	for _, at := range fileOf {
		count[at]++
	}
	first := make([]int, len(files)) // where each file's locations start
	n := 0
	for _, at := range order {
		first[at] = n
		n += count[at]
	}
	placed := make([]int32, len(locs))
	next := slices.Clone(first)
	for i, at := range fileOf {
		placed[next[at]] = int32(i)
		next[at]++
	}
	byPos := func(a, b int32) int {
		pa, pb := locs[a].Range.Start, locs[b].Range.Start
		if pa.Line != pb.Line {
			return cmp.Compare(pa.Line, pb.Line)
		}
		return cmp.Compare(pa.Character, pb.Character)
	}
	out := make([]Location, 0, len(locs))
	for _, at := range order {
		group := placed[first[at]:next[at]]
		if !slices.IsSortedFunc(group, byPos) {
			slices.SortFunc(group, byPos)
		}
		for j, i := range group {
			if j > 0 && locs[i].Range.Start == locs[group[j-1]].Range.Start {
				continue // a duplicate
			}
			out = append(out, locs[i])
		}
	}
	return out
}

// locations writes locations one per line with the source line:
// "path:line:col: source". Past max items the rest is counted.
func (w where) locations(a *answer, fc *fileCache, locs []Location, max int) {
	for i, l := range locs {
		if i >= max {
			if i > max && l.Path == locs[i-1].Path {
				a.skip(1, "") // its file is counted
			} else {
				a.skip(1, l.Path)
			}
			continue
		}
		s := w.locName(fc, l)
		if src := srcLine(fc, l); src != "" {
			s += ": " + src
		}
		a.line(l.Path, s+w.outsideNote(l.Path)+w.quoteNote(fc, l.Path))
	}
}

// grouped writes locations grouped by file: the file's name on a line,
// then "  line:col: source" for each. Past max items the rest is
// counted.
func (w where) grouped(a *answer, fc *fileCache, locs []Location, max int) {
	cur := "\x00"
	for i, l := range locs {
		if i >= max {
			if p := locs[i-1]; i > max && l.Path == p.Path && l.URI == p.URI {
				a.skip(1, "") // its file is counted
			} else {
				a.skip(1, l.Path+l.URI)
			}
			continue
		}
		if f := l.Path + l.URI; f != cur {
			cur = f
			name := l.URI
			if l.Path != "" {
				name = w.file(l.Path) + w.outsideNote(l.Path) + w.quoteNote(fc, l.Path)
			}
			a.line(f, name)
		}
		ls, _ := fc.get(l.Path)
		col := runeCol(ls.line(l.Range.Start.Line), l.Range.Start.Character)
		s := fmt.Sprintf("  %d:%d", l.Range.Start.Line+1, col+1)
		if src := srcLine(fc, l); src != "" {
			s += ": " + src
		}
		a.line(cur, s)
	}
}

// countFiles is how many files the locations are in; those of a file
// are next to each other (sortLocations).
func countFiles(locs []Location) int {
	n := 0
	for i, l := range locs {
		if i == 0 || l.Path != locs[i-1].Path || l.URI != locs[i-1].URI {
			n++
		}
	}
	return n
}

// outsideKind says what a file outside the workspace belongs to, from
// where it lies: the Go standard library or module cache, an npm
// package, a Python package or stub, a Rust crate, a system header.
func (w where) outsideKind(p string) string {
	p = filepath.ToSlash(p)
	if i := strings.Index(p, "/pkg/mod/"); i >= 0 {
		rest := p[i+len("/pkg/mod/"):]
		if j := strings.Index(rest, "@"); j > 0 {
			mod := rest[:j]
			ver := rest[j+1:]
			if k := strings.Index(ver, "/"); k > 0 {
				ver = ver[:k]
			}
			return "Go module " + mod + "@" + ver + ", in the module cache"
		}
		return "the Go module cache"
	}
	if goroot := w.goRootOf(p); goroot != "" {
		return "the Go standard library"
	}
	if i := strings.LastIndex(p, "/node_modules/"); i >= 0 {
		rest := p[i+len("/node_modules/"):]
		parts := strings.SplitN(rest, "/", 3)
		name := parts[0]
		if strings.HasPrefix(name, "@") && len(parts) > 1 {
			name += "/" + parts[1]
		}
		return "npm package " + name
	}
	if strings.Contains(p, "/typeshed") {
		return "Python's type stubs (typeshed)"
	}
	for _, d := range []string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(p, d); i >= 0 {
			name, _, _ := strings.Cut(p[i+len(d):], "/")
			return "Python package " + strings.TrimSuffix(name, ".py")
		}
	}
	if strings.Contains(p, "/rustlib/src/rust/") {
		return "the Rust standard library"
	}
	if i := strings.Index(p, "/.cargo/registry/src/"); i >= 0 {
		parts := strings.Split(p[i+len("/.cargo/registry/src/"):], "/")
		if len(parts) > 1 {
			return "crate " + parts[1] + ", in Cargo's registry"
		}
	}
	if strings.HasPrefix(p, "/usr/include/") || strings.HasPrefix(p, "/usr/lib/gcc/") || strings.HasPrefix(p, "/usr/lib/llvm") {
		return "a system header"
	}
	return ""
}

// goRootOf returns the Go installation p lies in (the folder above its
// src/ that holds bin/go or pkg/tool), or "".
func (w where) goRootOf(p string) string {
	for i := strings.Index(p, "/src/"); i >= 0; {
		dir := p[:i]
		is, ok := w.goRoots.Load(dir)
		if !ok {
			_, e1 := os.Stat(filepath.Join(dir, "bin", "go"))
			_, e2 := os.Stat(filepath.Join(dir, "pkg", "tool"))
			is = e1 == nil || e2 == nil
			w.goRoots.Store(dir, is)
		}
		if is.(bool) {
			return dir
		}
		j := strings.Index(p[i+1:], "/src/")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return ""
}
