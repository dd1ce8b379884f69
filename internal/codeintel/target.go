package codeintel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// target is what a question is about, once the model's words are
// resolved: a position to ask the server at, and, when a name led to its
// declaration, that declaration.
type target struct {
	at DocPos
	// decl is the declaration the name was found as, if it was (a
	// definition question then needs no server round trip).
	decl *Symbol
	// defs are the definitions already asked for while resolving a use
	// of the name in a file.
	defs []Location
	// what names the target in answers: "Greet (function)", or
	// "main.go:12:5".
	what string
	// others mentions same-named declarations passed over for a bare
	// name, "" when none.
	others string
}

// maxOccurrences bounds how many uses of a name in a file are asked
// about while resolving it.
const maxOccurrences = 8

// resolve turns the model's symbol, file, line and column into a target.
func (q *query) resolve(ctx context.Context) (target, error) {
	a := q.a
	sym := strings.TrimSpace(a.Symbol)
	if a.Column.set && !a.Line.set {
		return target{}, fmt.Errorf("column needs line (and file)")
	}
	if a.Line.set && a.File == "" {
		return target{}, fmt.Errorf("line needs file: give the file the line is in")
	}
	if sym == "" && a.File == "" {
		return target{}, fmt.Errorf("name the symbol (symbol), or give file, line and column of a place it occurs")
	}
	if sym == "" && !a.Line.set {
		return target{}, fmt.Errorf("give symbol, or line and column in %s", a.File)
	}
	if sym == "" && !a.Column.set {
		return target{}, fmt.Errorf("give column, or the symbol on line %d of %s", a.Line.n, a.File)
	}
	if a.File == "" {
		return q.byWorkspaceName(ctx, sym)
	}
	abs, rel, err := q.resolveFile(a.File)
	if err != nil {
		return target{}, err
	}
	ls, err := q.fc.get(abs)
	if err != nil {
		return target{}, fmt.Errorf("read %s: %v", rel, err)
	}
	if a.Line.set {
		return q.byPosition(ls, abs, rel, sym)
	}
	return q.byFileName(ctx, ls, abs, rel, sym)
}

// byPosition resolves file, line and column (or the symbol on the line).
func (q *query) byPosition(ls lines, abs, rel, sym string) (target, error) {
	n := q.a.Line.n
	// A file's last line ends with a newline, after which split gives an
	// empty "line": it does not count.
	count := len(ls)
	if count > 0 && ls[count-1] == "" {
		count--
	}
	if n < 1 || n > count {
		return target{}, fmt.Errorf("line %d is not in %s, which has %d %s%s", n, rel, count, plural(count, "line", "lines"), fromOne(n, "lines"))
	}
	text := ls[n-1]
	if q.a.Column.set {
		c := q.a.Column.n
		width := utf8.RuneCountInString(text)
		if c < 1 || c > width+1 {
			return target{}, fmt.Errorf("column %d is not on line %d of %s, which has %d characters: %s%s", c, n, rel, width, clipLine(text), fromOne(c, "columns"))
		}
		if sym != "" {
			// The model gave both: trust the position, but say when the
			// name is not there.
			_, name := splitName(sym)
			if !strings.Contains(text, name) {
				return target{}, fmt.Errorf("%s does not occur on line %d of %s: %s", name, n, rel, clipLine(text))
			}
		}
		return target{at: DocPos{Path: abs, Pos: Position{Line: n - 1, Character: utf16Col(text, c-1)}},
			what: fmt.Sprintf("%s:%d:%d", rel, n, c)}, nil
	}
	qual, name := splitName(sym)
	occ := findIdent(lines{text}, name, 100)
	if len(occ) == 0 {
		return target{}, fmt.Errorf("%s does not occur on line %d of %s: %s", name, n, rel, clipLine(text))
	}
	pick := occ[0]
	for _, o := range occ {
		if qual != "" && qualMatches(o.qualified, qual) {
			pick = o
			break
		}
	}
	return target{at: DocPos{Path: abs, Pos: Position{Line: n - 1, Character: pick.col16}},
		what: fmt.Sprintf("%s at %s:%d:%d", name, rel, n, pick.col+1)}, nil
}

// fromOne tells a model that counts from 0 (as LSP does) where counting
// starts, when n is below 1.
func fromOne(n int, what string) string {
	if n < 1 {
		return "; " + what + " count from 1"
	}
	return ""
}

// byFileName resolves a name in a file: a declaration of the file, else
// a use of the name there, whose definition the server finds.
func (q *query) byFileName(ctx context.Context, ls lines, abs, rel, sym string) (target, error) {
	qual, name := splitName(sym)
	outline, err := q.outlineOf(ctx, abs)
	if err != nil && !isUnsupported(err) {
		return target{}, err
	}
	cands, folded := match(flatten(outline, "", nil), qual, name)
	for i := range cands {
		cands[i].sym.Location.Path = abs
	}
	for i := range folded {
		folded[i].sym.Location.Path = abs
	}
	// Names match case first: declarations named otherwise than asked
	// ("response" for "Response") are taken only when the name, written
	// as asked, is neither declared nor used in the file; else they are
	// offered beside the answer.
	var occ []occurrence
	if len(cands) == 0 {
		occ = findIdent(ls, name, 200)
	}
	if len(cands) == 0 && len(occ) == 0 {
		cands, folded = folded, nil
	}
	if t, ok, err := q.declaredIn(abs, sym, cands, folded); ok {
		return t, err
	}
	// Not declared here: a use of it. Ask the server where each use
	// leads (a few), and take the one declaration they agree on.
	occ = fitQualified(occ, qual)
	if len(occ) == 0 {
		// Perhaps the wrong file: look in the whole workspace.
		t, err := q.byWorkspaceName(ctx, sym)
		if err != nil {
			return target{}, fmt.Errorf("%s is neither declared nor used in %s; in the workspace: %v", name, rel, err)
		}
		t.what += fmt.Sprintf(" (not in %s)", rel)
		return t, nil
	}
	firsts, err := q.useDefinitions(ctx, abs, occ)
	if err != nil {
		return target{}, err
	}
	switch {
	case len(firsts) == 0 && len(folded) > 0:
		// Written as asked only where nothing is declared (a comment):
		// the declarations differing in case are meant.
		t, _, err := q.declaredIn(abs, sym, folded, nil)
		return t, err
	case len(firsts) == 0:
		return target{}, fmt.Errorf("%s occurs in %s, but the language server finds no declaration for it there (in a comment or a string?); give line and column of a use", name, rel)
	case len(firsts) > 1:
		var b strings.Builder
		fmt.Fprintf(&b, "%s in %s means %d different declarations; give the line of the use you mean:", name, rel, len(firsts))
		for _, f := range firsts {
			fmt.Fprintf(&b, "\n  line %d: %s → %s%s", f.occ.line+1, clipLine(ls.line(f.occ.line)), q.t.w.locName(q.fc, f.defs[0]), q.t.w.outsideNote(f.defs[0].Path))
		}
		return target{}, fmt.Errorf("%s", b.String())
	}
	f := firsts[0]
	return target{at: DocPos{Path: abs, Pos: Position{Line: f.occ.line, Character: f.occ.col16}}, defs: f.defs,
		what: fmt.Sprintf("%s (used at %s:%d:%d)", name, rel, f.occ.line+1, f.occ.col+1), others: q.caseNote(folded)}, nil
}

// declaredIn is the one declaration of sym in the file abs among cands
// (ok), with folded, those differing in case, offered beside it; several
// are an error asking for the line. ok is false for none.
func (q *query) declaredIn(abs, sym string, cands, folded []candidate) (t target, ok bool, err error) {
	qual, _ := splitName(sym)
	keep, others := preferred(cands, qual != "")
	switch {
	case len(keep) == 1:
		s := keep[0].sym
		return target{at: DocPos{Path: abs, Pos: s.NamePos()}, decl: &s, what: q.describe(keep[0]), others: lines2(q.othersNote(others), q.caseNote(folded))}, true, nil
	case len(keep) > 1:
		return target{}, true, q.ambiguous(sym, keep, "give line, or qualify the name")
	}
	return target{}, false, nil
}

// fitQualified are the uses in occ whose qualifier fits qual, or all of
// them when none does or qual is "".
func fitQualified(occ []occurrence, qual string) []occurrence {
	if qual == "" {
		return occ
	}
	var fit []occurrence
	for _, o := range occ {
		if qualMatches(qual, o.qualified) || qualMatches(o.qualified, qual) {
			fit = append(fit, o)
		}
	}
	if len(fit) > 0 {
		return fit
	}
	return occ
}

// usedDef is a use of a name and where the server says it leads.
type usedDef struct {
	occ  occurrence
	defs []Location
}

// useDefinitions asks the server where each of the first uses in occ of
// the file abs leads, and keeps the first use of each declaration found;
// a use that leads nowhere (a comment, a string) is passed over.
func (q *query) useDefinitions(ctx context.Context, abs string, occ []occurrence) ([]usedDef, error) {
	var firsts []usedDef
	seen := map[string]bool{}
	for i, o := range occ {
		if i >= maxOccurrences {
			break
		}
		at := DocPos{Path: abs, Pos: Position{Line: o.line, Character: o.col16}}
		defs, err := q.t.src.Definition(ctx, at)
		if err != nil {
			return nil, err
		}
		if len(defs) == 0 {
			continue // a comment, a string
		}
		key := locKey(defs[0])
		if !seen[key] {
			seen[key] = true
			firsts = append(firsts, usedDef{o, defs})
		}
	}
	return firsts, nil
}

// byWorkspaceName resolves a name by searching the workspace's
// declarations.
func (q *query) byWorkspaceName(ctx context.Context, sym string) (target, error) {
	qual, name := splitName(sym)
	if name == "" {
		return target{}, fmt.Errorf("%q is not a name", sym)
	}
	syms, err := q.t.src.WorkspaceSymbols(ctx, name)
	if err != nil {
		return target{}, err
	}
	all := make([]candidate, len(syms))
	for i, s := range syms {
		all[i] = candidate{sym: s}
	}
	q.refine(ctx, all, name)
	cands, folded := match(all, qual, name)
	if len(cands) == 0 {
		cands, folded = folded, nil
	}
	// Declarations in the workspace win over the same names outside it
	// (the standard library, dependencies), unless only those match.
	var inside []candidate
	for _, c := range cands {
		if _, ok := q.t.w.rel(c.sym.Location.Path); ok {
			inside = append(inside, c)
		}
	}
	if len(inside) > 0 {
		cands = inside
	}
	cands = dedupe(cands)
	keep, others := preferred(cands, qual != "")
	var differ []candidate
	for _, c := range dedupe(folded) {
		if _, ok := q.t.w.rel(c.sym.Location.Path); ok {
			differ = append(differ, c)
		}
	}
	switch {
	case len(keep) == 1:
		s := keep[0].sym
		if p := s.Location.Path; p != "" {
			q.path = p
		}
		return target{at: DocPos{Path: s.Location.Path, Pos: s.NamePos()}, decl: &s, what: q.describe(keep[0]), others: lines2(q.othersNote(others), q.caseNote(differ))}, nil
	case len(keep) > 1:
		return target{}, q.ambiguous(sym, keep, "give file (one that declares or uses it), or qualify the name")
	}
	if why := q.unloaded(ctx); why != "" {
		return target{}, fmt.Errorf("no declaration named %s found: %s", sym, why)
	}
	msg := fmt.Sprintf("no declaration named %s in the workspace", sym)
	if len(syms) > 0 {
		var sug []string
		seen := map[string]bool{}
		for _, s := range syms {
			n := displayName(candidate{sym: s})
			if _, ok := q.t.w.rel(s.Location.Path); !ok || seen[n] {
				continue
			}
			seen[n] = true
			sug = append(sug, n)
			if len(sug) == 8 {
				break
			}
		}
		if len(sug) > 0 {
			msg += "; similar names: " + strings.Join(sug, ", ")
		}
	}
	msg += q.note(ctx)
	return target{}, fmt.Errorf("%s", msg)
}

// maxRefine bounds the files whose outline is read to refine workspace
// symbols.
const maxRefine = 8

// refine completes what some servers leave out of workspace symbols
// named name (typescript-language-server gives neither the container of
// a method nor the range of the name, only of the whole declaration):
// from the outline of the file they are in, the enclosing declaration's
// name becomes the qualifier and the name's own range the selection.
func (q *query) refine(ctx context.Context, cands []candidate, name string) {
	outlines := map[string][]candidate{}
	for i := range cands {
		c := &cands[i]
		cq, cn := splitName(c.sym.Name)
		if !strings.EqualFold(cn, name) || cq != "" || c.sym.Container != "" || c.sym.Selection != (Range{}) {
			continue
		}
		path := c.sym.Location.Path
		if _, ok := q.t.w.rel(path); !ok || path == "" {
			continue
		}
		outline, ok := outlines[path]
		if !ok {
			if len(outlines) >= maxRefine {
				continue
			}
			syms, err := q.outlineOf(ctx, path)
			if err != nil {
				syms = nil
			}
			outline = flatten(syms, "", nil)
			outlines[path] = outline
		}
		for _, o := range outline {
			_, on := splitName(o.sym.Name)
			if on == cn && o.sym.Kind == c.sym.Kind && o.sym.Location.Range.Start == c.sym.Location.Range.Start {
				c.qual = o.qual
				c.sym.Selection = o.sym.Selection
				break
			}
		}
	}
}

func isUnsupported(err error) bool { return errors.Is(err, ErrUnsupported) }

func dedupe(cands []candidate) []candidate {
	seen := map[string]bool{}
	out := cands[:0:0]
	for _, c := range cands {
		k := locKey(c.sym.Location) + "\x00" + c.sym.Name
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

func locKey(l Location) string {
	return fmt.Sprintf("%s%s:%d:%d", l.Path, l.URI, l.Range.Start.Line, l.Range.Start.Character)
}

// describe names a declaration: "Greet (function in greet/greet.go:16:6)".
func (q *query) describe(c candidate) string {
	l := c.sym.Location
	if c.sym.Selection != (Range{}) {
		l.Range = c.sym.Selection
	}
	return fmt.Sprintf("%s (%s, %s%s)", displayName(c), c.sym.Kind, q.t.w.locName(q.fc, l), q.t.w.outsideNote(l.Path))
}

// ambiguous lists the declarations a name may mean.
func (q *query) ambiguous(sym string, cands []candidate, how string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s names %d declarations; %s:", sym, len(cands), how)
	for i, c := range cands {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … and %d more", len(cands)-i)
			break
		}
		b.WriteString("\n  " + q.describe(c))
		if c.sym.Container != "" {
			b.WriteString(" in " + c.sym.Container)
		}
	}
	return fmt.Errorf("%s", b.String())
}

// lines2 joins the notes that are not empty, one a line.
func lines2(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "\n")
}

// caseNote offers the declarations whose names differ from the one
// asked in case only, passed over for the exact one.
func (q *query) caseNote(folded []candidate) string {
	if len(folded) == 0 {
		return ""
	}
	names := make([]string, 0, len(folded))
	for i, c := range folded {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(folded)-i))
			break
		}
		names = append(names, q.describe(c))
	}
	return "(names that differ in case only: " + strings.Join(names, ", ") + "; ask for one by its name as written there)"
}

// othersNote mentions the members passed over for a bare name.
func (q *query) othersNote(others []candidate) string {
	if len(others) == 0 {
		return ""
	}
	names := make([]string, 0, len(others))
	for i, c := range others {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(others)-i))
			break
		}
		names = append(names, q.describe(c))
	}
	return "(the same name also names " + strings.Join(names, ", ") + "; qualify the name to ask about one of them)"
}
