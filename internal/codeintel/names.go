package codeintel

import (
	"strings"
)

// splitName splits a symbol's name, as a server or a model writes it,
// into its qualifier and its own name: "(*Store).Add" → ("Store", "Add"),
// "English.Greet" → ("English", "Greet"), "greet.New" → ("greet", "New"),
// "std::vector::push_back" → ("std::vector", "push_back"), "add(int)" →
// ("", "add"), "List[T].Push" → ("List", "Push").
func splitName(s string) (qual, name string) {
	s = strings.TrimSpace(s)
	// A Go method's receiver: "(*Store).Add", "(English).Greet".
	if strings.HasPrefix(s, "(") {
		if i := strings.Index(s, ")"); i > 0 {
			s = strings.TrimLeft(s[1:i], "*") + s[i+1:]
		}
	}
	s = dropBracketed(s)
	// A signature after the name: "add(int, int)".
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	best := -1
	sepLen := 0
	for _, sep := range []string{"::", ".", "#", "/"} {
		if i := strings.LastIndex(s, sep); i > best {
			best, sepLen = i, len(sep)
		}
	}
	if best <= 0 || best+sepLen >= len(s) {
		return "", s
	}
	return s[:best], s[best+sepLen:]
}

// dropBracketed removes type parameters and arguments ("[T]", "<T>")
// from a name.
func dropBracketed(s string) string {
	if !strings.ContainsAny(s, "[<") {
		return s
	}
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch r {
		case '[', '<':
			depth++
			continue
		case ']', '>':
			if depth > 0 {
				depth--
				continue
			}
		}
		if depth == 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// qualMatches reports whether the qualifier a model wrote (q: "store",
// "Store", "shop/store") names one of a symbol's qualifiers: the one in
// its own name, or its container (a type, a package path).
func qualMatches(q string, quals ...string) bool {
	if q == "" {
		return true
	}
	for _, c := range quals {
		if c == "" {
			continue
		}
		if c == q || strings.HasSuffix(c, "."+q) || strings.HasSuffix(c, "/"+q) || strings.HasSuffix(c, "::"+q) {
			return true
		}
		// The model's qualifier may itself be longer than the symbol's
		// ("greet.English" for a method of English in package greet).
		if _, last := splitName(q); last == c {
			return true
		}
	}
	return false
}

// isMember reports whether a kind is a member of a type rather than a
// declaration of its own: a bare name prefers the latter.
func isMember(k SymbolKind) bool {
	switch k {
	case KindMethod, KindProperty, KindField, KindConstructor, KindEnumMember, KindEvent, KindOperator:
		return true
	}
	return false
}

// candidate is a declaration a name may mean, with its qualifiers.
type candidate struct {
	sym  Symbol
	qual string // the qualifier in its name, or its parent's name
}

// match keeps the candidates whose own name is name and whose qualifiers
// fit q: exact are those whose name is written as name is, folded those
// that differ from it in case only ("response" for "Response"). An exact
// match wins; the others are candidates to offer.
func match(cands []candidate, q, name string) (exact, folded []candidate) {
	for _, c := range cands {
		cq, cn := splitName(c.sym.Name)
		if cq == "" {
			cq = c.qual
		}
		if !qualMatches(q, cq, c.sym.Container) {
			continue
		}
		switch {
		case cn == name:
			exact = append(exact, c)
		case strings.EqualFold(cn, name):
			folded = append(folded, c)
		}
	}
	return exact, folded
}

// preferred narrows the candidates for a bare name (no qualifier) to the
// declarations of their own (functions, types, variables) when there are
// some besides members (methods, fields): "Greet" then means the
// function Greet, not the method English.Greet. The others are returned
// apart, to be mentioned.
func preferred(cands []candidate, qualified bool) (keep, others []candidate) {
	if qualified || len(cands) < 2 {
		return cands, nil
	}
	for _, c := range cands {
		if isMember(c.sym.Kind) {
			others = append(others, c)
		} else {
			keep = append(keep, c)
		}
	}
	if len(keep) == 0 {
		return cands, nil
	}
	return keep, others
}

// flatten lists a file's outline as candidates, each child qualified by
// its parent's name.
func flatten(syms []Symbol, parent string, out []candidate) []candidate {
	for _, s := range syms {
		out = append(out, candidate{sym: s, qual: parent})
		if len(s.Children) > 0 {
			_, own := splitName(s.Name)
			out = flatten(s.Children, own, out)
		}
	}
	return out
}

// displayName is a symbol's name as the answers show it: with its
// qualifier ("Store.Add"), the receiver's pointer and parentheses gone.
func displayName(c candidate) string {
	q, n := splitName(c.sym.Name)
	if q == "" {
		q = c.qual
	}
	if q == "" && isMember(c.sym.Kind) {
		q = c.sym.Container // pyright: a method's class
	}
	if q != "" {
		return q + "." + n
	}
	return n
}
