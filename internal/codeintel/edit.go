package codeintel

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DefaultAfterEditTimeout bounds AfterEdit when its context has no
// deadline of its own: the edit's result waits that long at most for its
// language server.
const DefaultAfterEditTimeout = 20 * time.Second

// maxNewDiagnostics bounds the problems AfterEdit lists.
const maxNewDiagnostics = 20

// Starting is told when AfterEdit's check starts the language server
// of the file it checks (not running yet: its first start takes seconds
// for gopls), before it waits: the file, workspace-relative, and the
// server's name. The func it returns (nil: none) is called when the
// check is over.
type Starting func(rel, server string) (done func())

// AfterEdit returns, worded for a model, the errors and warnings that
// are new after the file at path (absolute, in the workspace) changed
// from old (nil for a file that did not exist) to its text on disk: in
// that file and in the others its language server reports on. It is ""
// when there are none, or when no language server serves the file:
// an edit's result says nothing then. The Source first sees old, then
// the disk, so that what was already wrong before is left out. It waits
// until ctx's deadline, or DefaultAfterEditTimeout when ctx has none.
// starting (nil: nobody) is told when the check starts the server.
func (t *Tools) AfterEdit(ctx context.Context, path string, old *string, starting Starting) string {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultAfterEditTimeout)
		defer cancel()
	}
	rel, ok := t.w.rel(path)
	if !ok {
		return ""
	}
	st, err := t.status(ctx, path)
	if err != nil {
		return ""
	}
	if st.Starting && starting != nil {
		if done := starting(rel, serverOf(st)); done != nil {
			defer done()
		}
	}
	// A new file is first an empty one: its server then knows it (gopls
	// would otherwise take a file it finds on disk unannounced for one
	// outside any package), and what was wrong before is what was wrong
	// without its content.
	empty := ""
	if old == nil {
		old = &empty
	}
	if err := t.src.Changed(ctx, []Change{{Path: path, Text: old}}); err != nil {
		return ""
	}
	before, err := t.snapshot(ctx, path)
	if err != nil {
		return ""
	}
	if err := t.src.Changed(ctx, []Change{{Path: path}}); err != nil {
		return ""
	}
	after, err := t.snapshot(ctx, path)
	if err != nil {
		return ""
	}
	fresh := newDiagnostics(before, after)
	if len(fresh) == 0 {
		return ""
	}
	q := &query{t: t, fc: t.fileCache(ctx)}
	n := 0
	for _, f := range fresh {
		n += len(f.Diagnostics)
	}
	who := "The language server"
	if st, err := t.status(ctx, path); err == nil && st.Server != "" {
		who = st.Server
	}
	a := newAnswer(t.opts.MaxChars)
	a.line("", fmt.Sprintf("%s reports %d new %s after this edit of %s:", who, n, plural(n, "problem", "problems"), rel))
	sortFileDiagnostics(t.w, fresh)
	items := 0
	for _, f := range fresh {
		ls, err := q.fc.get(f.Path)
		why, _ := withheld(err)
		for _, d := range f.Diagnostics {
			if items >= maxNewDiagnostics {
				a.skip(1, f.Path)
				continue
			}
			items++
			a.line(f.Path, diagLine(t.w, ls, why, f.Path, d))
		}
	}
	return a.text("use code_diagnostics") + fixNotes(fresh)
}

// snapshot is the diagnostics of path and of every file the Source knows
// problems of, errors and warnings only.
func (t *Tools) snapshot(ctx context.Context, path string) ([]FileDiagnostics, error) {
	one, err := t.src.Diagnostics(ctx, []string{path})
	if err != nil {
		return nil, err
	}
	all, err := t.src.Diagnostics(ctx, nil)
	if err != nil && !IsNoServer(err) {
		return nil, err
	}
	byPath := map[string][]Diagnostic{}
	fixes := map[string]string{}
	for _, f := range append(all, one...) {
		if _, ok := t.w.rel(f.Path); !ok {
			continue
		}
		var keep []Diagnostic
		for _, d := range f.Diagnostics {
			if d.Severity == SevError || d.Severity == SevWarning || d.Severity == 0 {
				keep = append(keep, d)
			}
		}
		byPath[f.Path] = keep // the file's own answer comes last and wins
		fixes[f.Path] = f.Fix
	}
	out := make([]FileDiagnostics, 0, len(byPath))
	for p, ds := range byPath {
		out = append(out, FileDiagnostics{Path: p, Diagnostics: ds, Fix: fixes[p]})
	}
	return out, nil
}

// newDiagnostics returns the diagnostics of after that before has not:
// told apart by file, severity, message and code, not by position (an
// edit moves the lines after it), counted (a second copy of a problem is
// new).
func newDiagnostics(before, after []FileDiagnostics) []FileDiagnostics {
	key := func(p string, d Diagnostic) string {
		return strings.Join([]string{p, d.Severity.String(), d.Code, d.Message}, "\x00")
	}
	had := map[string]int{}
	for _, f := range before {
		for _, d := range f.Diagnostics {
			had[key(f.Path, d)]++
		}
	}
	var out []FileDiagnostics
	for _, f := range after {
		var ds []Diagnostic
		for _, d := range f.Diagnostics {
			k := key(f.Path, d)
			if had[k] > 0 {
				had[k]--
				continue
			}
			ds = append(ds, d)
		}
		if len(ds) > 0 {
			out = append(out, FileDiagnostics{Path: f.Path, Diagnostics: ds, Fix: f.Fix})
		}
	}
	return out
}
