package codeintel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// maxHover bounds a hover's text.
const maxHover = 4000

func (q *query) head(t target, s string) string {
	if t.others != "" {
		s += "\n" + t.others
	}
	return s
}

func (q *query) definition(ctx context.Context) (string, error) {
	t, err := q.resolve(ctx)
	if err != nil {
		return "", err
	}
	var locs []Location
	switch {
	case t.decl != nil:
		l := t.decl.Location
		if t.decl.Selection != (Range{}) {
			l.Range = t.decl.Selection
		}
		locs = []Location{l}
	case t.defs != nil:
		locs = t.defs
	default:
		if locs, err = q.t.src.Definition(ctx, t.at); err != nil {
			return "", err
		}
	}
	if len(locs) == 0 {
		return fmt.Sprintf("No definition found for %s (the position may be on a keyword, a literal or a comment).", t.what) + q.note(ctx), nil
	}
	locs = q.t.w.sortLocations(locs)
	a := newAnswer(q.t.opts.MaxChars)
	a.line("", q.head(t, fmt.Sprintf("%s is defined at:", t.what)))
	q.t.w.locations(a, q.fc, locs, q.t.opts.MaxItems)
	return a.text("") + q.note(ctx), nil
}

func (q *query) references(ctx context.Context) (string, error) {
	t, err := q.resolve(ctx)
	if err != nil {
		return "", err
	}
	locs, err := q.t.src.References(ctx, t.at)
	if err != nil {
		return "", err
	}
	if len(locs) == 0 {
		return fmt.Sprintf("No references found for %s.", t.what) + q.note(ctx), nil
	}
	locs = q.t.w.sortLocations(locs)
	a := newAnswer(q.t.opts.MaxChars)
	nf := countFiles(locs)
	a.line("", q.head(t, fmt.Sprintf("%d %s to %s (its declaration included), in %d %s:", len(locs), plural(len(locs), "reference", "references"), t.what, nf, plural(nf, "file", "files"))))
	q.t.w.grouped(a, q.fc, locs, q.t.opts.MaxItems)
	return a.text("ask about one file's uses with code_references and file, line and column there, or use code_calls for callers"), nil
}

// A locating is a question about a symbol whose answer is the
// locations one LSP request gives at the symbol's position (where its
// type is declared, what implements it): a table entry of questions that
// needs no code of its own. A Source that is a Locator answers any such
// request by its method; the questions the Source interface names ask it
// through Ask. The request must be one of ide.LSPMethods, which the
// editors' plugins and gemkit's own servers carry.
type locating struct {
	Tool, Title string
	// Description tells the model what it finds; byName is added.
	Description string
	// Method is the LSP request ("textDocument/typeDefinition").
	Method string
	// Ask, when set, asks the Source (Source.Implementations); else a
	// Locator is asked for Method.
	Ask func(Source, context.Context, DocPos) ([]Location, error)
	// One and Many name what the answer lists ("implementation",
	// "implementations").
	One, Many string
}

// question is the code_* tool of l.
func (l locating) question() question {
	return question{Decl: Decl{Name: l.Tool, Title: l.Title, Description: l.Description + byName, Schema: positionSchema(nil)},
		args: positionArgs, answer: l.answer}
}

// Locator is a Source that also asks, by its method, any request of
// ide.LSPMethods whose answer is locations (Location, Location[] or
// LocationLink[]) about a position: internal/lspsource's does.
type Locator interface {
	Locations(ctx context.Context, method string, at DocPos) ([]Location, error)
}

func (l locating) locate(ctx context.Context, src Source, at DocPos) ([]Location, error) {
	if l.Ask != nil {
		return l.Ask(src, ctx, at)
	}
	if lo, ok := src.(Locator); ok {
		return lo.Locations(ctx, l.Method, at)
	}
	return nil, ErrUnsupported
}

func (l locating) answer(q *query, ctx context.Context) (string, error) {
	t, err := q.resolve(ctx)
	if err != nil {
		return "", err
	}
	locs, err := l.locate(ctx, q.t.src, t.at)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return "", fmt.Errorf("the language server for this file does not offer %s", l.Many)
		}
		return "", err
	}
	if len(locs) == 0 {
		return fmt.Sprintf("No %s found for %s.", l.Many, t.what) + q.note(ctx), nil
	}
	locs = q.t.w.sortLocations(locs)
	a := newAnswer(q.t.opts.MaxChars)
	a.line("", q.head(t, fmt.Sprintf("%d %s of %s:", len(locs), plural(len(locs), l.One, l.Many), t.what)))
	q.t.w.locations(a, q.fc, locs, q.t.opts.MaxItems)
	return a.text(""), nil
}

func (q *query) hover(ctx context.Context) (string, error) {
	t, err := q.resolve(ctx)
	if err != nil {
		return "", err
	}
	// A hover is what the server read at the symbol's declaration (its
	// comment, a constant's value as its type): it is shown only when
	// the declaration's file may be quoted. The definition is asked for
	// beside the hover, when resolving did not find it already and the
	// server could have read a file no answer quotes: a confined one
	// (gemkit's own, in their sandbox profile) cannot, and is spared the
	// second request.
	defs := make(chan []Location, 1)
	switch {
	case confined(ctx, q.t.src):
		defs <- nil
	case t.decl != nil:
		defs <- []Location{t.decl.Location}
	case t.defs != nil:
		defs <- t.defs
	default:
		go func() {
			locs, _ := q.t.src.Definition(ctx, t.at)
			defs <- locs
		}()
	}
	h, err := q.t.src.Hover(ctx, t.at)
	if err != nil {
		return "", err
	}
	for _, l := range <-defs {
		if _, held := q.fc.withheld(l.Path); held {
			return q.head(t, fmt.Sprintf("%s is declared at %s%s: what the language server says of it is not shown either.",
				t.what, q.t.w.locName(q.fc, l), q.t.w.outsideNote(l.Path)+q.t.w.quoteNote(q.fc, l.Path))), nil
		}
	}
	text := strings.TrimSpace(h.Text)
	if text == "" {
		return fmt.Sprintf("The language server has nothing to say about %s.", t.what) + q.note(ctx), nil
	}
	if len(text) > maxHover {
		cut := text[:maxHover]
		for len(cut) > 0 && !isRuneStart(cut[len(cut)-1]) {
			cut = cut[:len(cut)-1]
		}
		text = strings.TrimSpace(cut) + fmt.Sprintf("\n[… %d more characters not shown]", len(text)-len(cut))
	}
	return q.head(t, t.what+":") + "\n" + text, nil
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func (q *query) calls(ctx context.Context) (string, error) {
	dir := strings.ToLower(strings.TrimSpace(q.a.Direction))
	if dir == "" {
		dir = "incoming"
	}
	if dir != "incoming" && dir != "outgoing" {
		return "", fmt.Errorf("direction is incoming (who calls it) or outgoing (what it calls), not %q", q.a.Direction)
	}
	t, err := q.resolve(ctx)
	if err != nil {
		return "", err
	}
	var calls []Call
	if dir == "incoming" {
		calls, err = q.t.src.IncomingCalls(ctx, t.at)
	} else {
		calls, err = q.t.src.OutgoingCalls(ctx, t.at)
	}
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return "", fmt.Errorf("the language server for this file does not offer a call hierarchy; use code_references instead")
		}
		return "", err
	}
	if len(calls) == 0 {
		if dir == "incoming" {
			return fmt.Sprintf("Nothing in the workspace calls %s.", t.what) + q.note(ctx), nil
		}
		return fmt.Sprintf("%s calls no function.", t.what) + q.note(ctx), nil
	}
	slices.SortFunc(calls, func(a, b Call) int {
		return cmp.Or(strings.Compare(a.Symbol.Location.Path, b.Symbol.Location.Path),
			cmp.Compare(a.Symbol.Location.Range.Start.Line, b.Symbol.Location.Range.Start.Line))
	})
	a := newAnswer(q.t.opts.MaxChars)
	if dir == "incoming" {
		a.line("", q.head(t, fmt.Sprintf("%s is called by %d %s:", t.what, len(calls), plural(len(calls), "function", "functions"))))
	} else {
		a.line("", q.head(t, fmt.Sprintf("%s calls %d %s:", t.what, len(calls), plural(len(calls), "function", "functions"))))
	}
	items := 0
	for _, c := range calls {
		if items >= q.t.opts.MaxItems {
			a.skip(1, c.Symbol.Location.Path)
			continue
		}
		items++
		l := c.Symbol.Location
		if c.Symbol.Selection != (Range{}) {
			l.Range = c.Symbol.Selection
		}
		name := displayName(candidate{sym: c.Symbol})
		if c.Symbol.Container != "" && !strings.Contains(name, ".") {
			name += " (" + c.Symbol.Container + ")"
		}
		a.line(l.Path, fmt.Sprintf("%s %s at %s%s", c.Symbol.Kind, name, q.t.w.locName(q.fc, l), q.t.w.outsideNote(l.Path)+q.t.w.quoteNote(q.fc, l.Path)))
		sites := q.t.w.sortLocations(c.Sites)
		for i, s := range sites {
			if i == 5 {
				a.line(l.Path, fmt.Sprintf("  … and %d more calls there", len(sites)-i))
				break
			}
			line := "  call at " + q.t.w.locName(q.fc, s)
			if src := srcLine(q.fc, s); src != "" {
				line += ": " + src
			}
			a.line(l.Path, line)
		}
	}
	return a.text(""), nil
}

func (q *query) symbols(ctx context.Context) (string, error) {
	file, query := strings.TrimSpace(q.a.File), strings.TrimSpace(q.a.Query)
	switch {
	case file != "" && query != "":
		return "", fmt.Errorf("give file (to outline it) or query (to search the workspace), not both")
	case file != "":
		return q.outline(ctx, file)
	case query != "":
		return q.search(ctx, query)
	}
	return "", fmt.Errorf("give file (to outline it) or query (to search the workspace)")
}

func (q *query) outline(ctx context.Context, file string) (string, error) {
	abs, rel, err := q.resolveFile(file)
	if err != nil {
		return "", err
	}
	syms, err := q.t.src.DocumentSymbols(ctx, abs)
	if err != nil {
		return "", err
	}
	if len(syms) == 0 {
		return fmt.Sprintf("%s declares nothing the language server reports.", rel) + q.note(ctx), nil
	}
	n := countSymbols(syms)
	a := newAnswer(q.t.opts.MaxChars)
	a.line("", fmt.Sprintf("%s: %d %s (line:col kind name detail):", rel, n, plural(n, "declaration", "declarations")))
	ls, _ := q.fc.get(abs)
	var walk func([]Symbol, int)
	walk = func(syms []Symbol, depth int) {
		syms = slices.Clone(syms)
		slices.SortStableFunc(syms, func(a, b Symbol) int {
			pa, pb := a.NamePos(), b.NamePos()
			return cmp.Or(cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Character, pb.Character))
		})
		for _, s := range syms {
			p := s.NamePos()
			line := fmt.Sprintf("%s%d:%d %s %s", strings.Repeat("  ", depth+1), p.Line+1, runeCol(ls.line(p.Line), p.Character)+1, s.Kind, s.Name)
			if d := oneLine(s.Detail); d != "" {
				line += " " + d
			}
			a.line("", line)
			walk(s.Children, depth+1)
		}
	}
	walk(syms, 0)
	return a.text("outline a smaller file, or search with query"), nil
}

// countSymbols counts an outline's declarations, nested ones included.
func countSymbols(syms []Symbol) int {
	n := len(syms)
	for _, s := range syms {
		n += countSymbols(s.Children)
	}
	return n
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func (q *query) search(ctx context.Context, query string) (string, error) {
	syms, err := q.t.src.WorkspaceSymbols(ctx, query)
	if err != nil {
		return "", err
	}
	// Exact names first, then the workspace's own, then the rest as the
	// server ranked them.
	_, want := splitName(query)
	syms = holding(syms, want)
	rank := func(s Symbol) int {
		r := 0
		if _, n := splitName(s.Name); n != want {
			r += 2
		}
		if _, ok := q.t.w.rel(s.Location.Path); !ok {
			r++
		}
		return r
	}
	slices.SortStableFunc(syms, func(a, b Symbol) int { return cmp.Compare(rank(a), rank(b)) })
	if len(syms) == 0 {
		if why := q.unloaded(ctx); why != "" {
			return fmt.Sprintf("No declarations match %q: %s.", query, why), nil
		}
		return fmt.Sprintf("No declarations match %q.", query) + q.note(ctx), nil
	}
	a := newAnswer(q.t.opts.MaxChars)
	a.line("", fmt.Sprintf("%d %s %q:", len(syms), plural(len(syms), "declaration matches", "declarations match"), query))
	for i, s := range syms {
		if i >= q.t.opts.MaxItems {
			a.skip(1, s.Location.Path)
			continue
		}
		line := fmt.Sprintf("%s %s %s", q.t.w.locName(q.fc, s.Location), s.Kind, displayName(candidate{sym: s}))
		if s.Container != "" {
			line += " (" + s.Container + ")"
		}
		a.line(s.Location.Path, line+q.t.w.outsideNote(s.Location.Path))
	}
	return a.text("search for a longer name") + q.note(ctx), nil
}

// holding keeps the symbols whose name holds name, in any case, when
// some do: a server's fuzzy match also offers names that merely hold its
// letters in order (gopls gave "NsecToTimeval" and "RotateLeft" for
// "Total", 97 of 100 answers), which would fill the answer. When none
// holds it, the server's matches are all there is.
func holding(syms []Symbol, name string) []Symbol {
	name = strings.ToLower(name)
	var kept []Symbol
	for _, s := range syms {
		if strings.Contains(strings.ToLower(s.Name), name) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return syms
	}
	return kept
}

func (q *query) diagnostics(ctx context.Context) (string, error) {
	var paths []string
	rel := ""
	if strings.TrimSpace(q.a.File) != "" {
		abs, r, err := q.resolveFile(q.a.File)
		if err != nil {
			return "", err
		}
		paths, rel = []string{abs}, r
	}
	files, err := q.t.src.Diagnostics(ctx, paths)
	if err != nil {
		return "", err
	}
	return q.formatDiagnostics(ctx, files, rel), nil
}

// formatDiagnostics writes diagnostics grouped by file, errors first.
func (q *query) formatDiagnostics(ctx context.Context, files []FileDiagnostics, one string) string {
	var total, errs, warns int
	for _, f := range files {
		for _, d := range f.Diagnostics {
			total++
			switch d.Severity {
			case SevError:
				errs++
			case SevWarning:
				warns++
			}
		}
	}
	stale := staleNotes(q.t.w, files)
	if total == 0 {
		if one != "" {
			return fmt.Sprintf("No problems reported in %s.", one) + stale + q.note(ctx)
		}
		return "No problems reported in the workspace (as far as its language servers have checked it: files they have not opened may not be checked)." + stale + q.note(ctx)
	}
	a := newAnswer(q.t.opts.MaxChars)
	where := "the workspace"
	if one != "" {
		where = one
	}
	a.line("", fmt.Sprintf("%d %s in %s: %d %s, %d %s, %d other:", total, plural(total, "problem", "problems"), where,
		errs, plural(errs, "error", "errors"), warns, plural(warns, "warning", "warnings"), total-errs-warns))
	sortFileDiagnostics(q.t.w, files)
	items := 0
	for _, f := range files {
		if len(f.Diagnostics) == 0 {
			continue
		}
		ls, err := q.fc.get(f.Path)
		why, _ := withheld(err)
		for _, d := range f.Diagnostics {
			if items >= q.t.opts.MaxItems {
				a.skip(1, f.Path)
				continue
			}
			items++
			a.line(f.Path, diagLine(q.t.w, ls, why, f.Path, d))
		}
	}
	return a.text("ask about one file with file") + fixNotes(files) + stale + q.note(ctx)
}

// fixNotes are the lines saying what to do about the problems
// (FileDiagnostics.Fix), each once: files that import one missing
// module get the same words.
func fixNotes(files []FileDiagnostics) string {
	var b strings.Builder
	var seen []string
	for _, f := range files {
		if f.Fix == "" || slices.Contains(seen, f.Fix) {
			continue
		}
		seen = append(seen, f.Fix)
		fmt.Fprintf(&b, "\n[%s]", f.Fix)
	}
	return b.String()
}

// staleNotes are the lines saying which files' problems may not be
// current, and why (FileDiagnostics.Stale), at most a few.
func staleNotes(w where, files []FileDiagnostics) string {
	var b strings.Builder
	n := 0
	for _, f := range files {
		if f.Stale == "" {
			continue
		}
		if n++; n > 3 {
			continue
		}
		fmt.Fprintf(&b, "\n[%s: %s]", w.file(f.Path), f.Stale)
	}
	if n > 3 {
		fmt.Fprintf(&b, "\n[and %d more files whose problems may not be current]", n-3)
	}
	return b.String()
}

// diagLine is "path:line:col: severity: message (source code)" and the
// source line under it. held, when not "", says why the file's text is
// not shown: its messages are not either (a parser's message quotes the
// text it stumbled on).
func diagLine(w where, ls lines, held, path string, d Diagnostic) string {
	col := runeCol(ls.line(d.Range.Start.Line), d.Range.Start.Character)
	msg := oneLineMsg(d.Message)
	if held != "" {
		msg = "[message " + held + "]"
	}
	s := fmt.Sprintf("%s:%d:%d: %s: %s", w.file(path), d.Range.Start.Line+1, col+1, d.Severity, msg)
	var by []string
	if d.Source != "" {
		by = append(by, d.Source)
	}
	if d.Code != "" {
		by = append(by, d.Code)
	}
	if len(by) > 0 {
		s += " (" + strings.Join(by, " ") + ")"
	}
	if src := clipLine(ls.line(d.Range.Start.Line)); src != "" {
		s += "\n    " + src
	}
	return s
}

// oneLineMsg keeps a diagnostic's message on one line, at most 300
// characters.
func oneLineMsg(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// sortFileDiagnostics orders files with errors first, then by path, and
// each file's diagnostics by severity, then position.
func sortFileDiagnostics(w where, files []FileDiagnostics) {
	worst := func(f FileDiagnostics) int {
		m := 5
		for _, d := range f.Diagnostics {
			s := int(d.Severity)
			if s == 0 {
				s = 1
			}
			m = min(m, s)
		}
		return m
	}
	for _, f := range files {
		slices.SortStableFunc(f.Diagnostics, func(a, b Diagnostic) int {
			return cmp.Or(cmp.Compare(sevRank(a.Severity), sevRank(b.Severity)),
				cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
		})
	}
	slices.SortStableFunc(files, func(a, b FileDiagnostics) int {
		return cmp.Or(cmp.Compare(worst(a), worst(b)), strings.Compare(w.file(a.Path), w.file(b.Path)))
	})
}

func sevRank(s Severity) int {
	if s == 0 {
		return 1
	}
	return int(s)
}
