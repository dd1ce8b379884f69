package agentread

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ParseYAML reads text as js-yaml 4.1's load does with its default
// schema (the one gemini-cli-core 0.61 reads agents' front matter with,
// agentLoader.ts): the structure comes from go.yaml.in/yaml/v3, each
// plain scalar is resolved by js-yaml's own rules (null, bool, int,
// float, in that order; 0x1F, 1_000, .inf and 012 are numbers), keys
// become strings as JavaScript's String makes them, and a key given
// twice is an error, as in js-yaml. What the two could read apart is
// [Unreadable]: anchors and aliases, explicit tags, merge keys (<<),
// timestamps (js-yaml makes a Date), keys that are not scalars,
// integers past 2^53, and text that is not valid UTF-8.
func ParseYAML(text []byte) (Value, error) {
	return parseYAML(text)
}

func parseYAML(text []byte) (Value, error) {
	if !utf8.Valid(text) {
		return Value{}, &Unreadable{Why: "it is not valid UTF-8 (Node replaces the bad bytes, and gemkit does not guess how)"}
	}
	if why := yamlApart(text); why != "" {
		return Value{}, &Unreadable{Why: why}
	}
	// js-yaml reads a text as if it ended with a line break (a block
	// scalar at its end keeps one); a front matter never has one, the
	// regex of agentLoader.ts ends it before the "\n---".
	src := string(text)
	if !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		if len(text) == 0 {
			return Value{kind: Undefined}, nil
		}
		// js-yaml gives null for some texts without a value (two
		// newlines, a comment) and undefined for others (one newline).
		return Value{}, &Unreadable{Why: "it holds no value"}
	} else if err != nil {
		// Where yaml.v3 stops, js-yaml may read on (it takes a quoted
		// string over lines yaml.v3 refuses): not known to be refused.
		return Value{}, &Unreadable{Why: "yaml.v3 cannot read it (" + err.Error() + "), and js-yaml may"}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		// js-yaml's load refuses a second document; a text yaml.v3
		// cannot read past the first is refused by both, or unknown.
		if err == nil {
			return Value{}, &SyntaxError{Parser: "js-yaml", Offset: -1, Msg: "more than one document"}
		}
		return Value{}, &Unreadable{Why: "after its first document: " + err.Error()}
	}
	if len(doc.Content) == 0 {
		return Value{kind: Null}, nil
	}
	top := doc.Content[0]
	if top.Kind == yaml.ScalarNode {
		// Front matter is a mapping (or a list of remote agents); a text
		// that is one scalar is read apart at its edges.
		return Value{}, &Unreadable{Why: "it is a single value, not a mapping or a list"}
	}
	r := &yamlReader{lines: strings.Split(string(text), "\n")}
	return r.value(top, 0)
}

// yamlReader builds values from yaml.v3's nodes, with the text's lines
// to look at how a scalar was written.
type yamlReader struct {
	lines []string
	// flow is set inside a flow collection ([a, b], {a: b}).
	flow bool
}

// flowPlain is a plain scalar inside a flow collection that the two read
// alike: words of letters, digits and . _ / @ + -, spaced singly. They
// part on others ({0:} is one key to yaml.v3, a key and null to js-yaml).
var flowPlain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./@+-]+(?: [A-Za-z0-9_./@+-]+)*$`) })

// yamlApart names a construct on which yaml.v3 and js-yaml were seen to
// build different values (FuzzYAMLMatchesJSYAML found each), or "".
func yamlApart(text []byte) string {
	lines := strings.Split(string(text), "\n")
	if why := markerApart(lines); why != "" {
		return why
	}
	if strings.Contains(strings.ReplaceAll(string(text), "\r\n", ""), "\r") {
		// js-yaml breaks a line at a lone CR; yaml.v3 and these checks
		// at LF only.
		return "a carriage return without a line feed"
	}
	if strings.Contains(string(text), "\\'") {
		// yaml.v3 takes \' in a double-quoted string; js-yaml refuses it.
		return "the escape \\' in a quoted string"
	}
	for _, l := range lines {
		if nestedEmpty().MatchString(strings.TrimSpace(l)) {
			// "- -": js-yaml takes the entries after it into the inner
			// sequence, yaml.v3 into the outer one.
			return "a sequence entry that is an empty sequence entry (- -)"
		}
	}
	if why := flowApart(lines); why != "" {
		return why
	}
	for _, line := range lines {
		if tagStart().MatchString(unquoted(line)) {
			// yaml.v3 drops a bare "!" that js-yaml refuses.
			return "a tag (!)"
		}
	}
	for i, line := range lines {
		rest := strings.TrimLeft(line, " ")
		after, ok := strings.CutPrefix(rest, "-")
		if !ok || (after != "" && after[0] != ' ' && after[0] != '\t') {
			continue
		}
		if body := strings.TrimLeft(after, " \t"); body != "" && body[0] != '#' {
			continue
		}
		// An empty entry ("-", "- #c") that ends its sequence: js-yaml
		// goes on taking the entries after it, even less indented, into
		// that sequence.
		col := len(line) - len(rest)
		if next, ok := nextIndent(lines[i+1:]); !ok || next <= col {
			return "a sequence that ends with an empty entry (-)"
		}
	}
	return ""
}

// markerApart looks at the first line that holds more than a comment:
// js-yaml takes "---" there as the document's start whatever follows it
// ("---a: 1" is {a: 1} to js-yaml, {"---a": 1} to yaml.v3), so anything
// on that line after the three dashes, or a directive (%), is read apart.
func markerApart(lines []string) string {
	for _, l := range lines {
		rest := strings.TrimLeft(l, " \t")
		if rest == "" || rest[0] == '#' {
			continue
		}
		if l[0] == '%' {
			return "a directive (%)"
		}
		after, ok := strings.CutPrefix(l, "---")
		if ok && strings.TrimSpace(after) != "" {
			return "text after the document's start (---) on its line"
		}
		return ""
	}
	return ""
}

// flowApart names what, in brackets or braces ([a, b], {a: b}) or as a
// block's explicit key (? at a line's start), the two were seen to read
// apart ("[?0: 0]": js-yaml's key is "?0", yaml.v3's "0"), or "". Inside
// a flow collection only words, the brackets and braces, commas, spaces
// and a colon followed by a space are read; quoted strings are left out
// of the look (unquoted). Agents' front matter writes lists of names.
func flowApart(lines []string) string {
	depth := 0
	for _, line := range lines {
		u := unquoted(line)
		if depth == 0 && strings.HasPrefix(strings.TrimLeft(u, " \t-"), "?") {
			return "an explicit key (?)"
		}
		for i := 0; i < len(u); i++ {
			c := u[i]
			switch {
			case c == '[' || c == '{':
				depth++
				continue
			case c == ']' || c == '}':
				depth = max(depth-1, 0)
				continue
			case depth == 0:
				continue
			case c == ':' && i+1 < len(u) && u[i+1] != ' ':
				return "a colon not followed by a space in brackets or braces"
			case !flowByte(c):
				return fmt.Sprintf("the character %q in brackets or braces", c)
			}
		}
		if depth > 0 {
			// Where a line ends inside one, the two part on what
			// joins the lines ([0 then 0]: one value or two).
			return "brackets or braces over several lines"
		}
	}
	return ""
}

// flowByte is a byte flowApart reads inside a flow collection.
func flowByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_./@+- \t,:", c) >= 0
}

// nestedEmpty is a line of sequence entries ending in an empty one.
var nestedEmpty = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:-[ \t]+)+-(?:[ \t]+#.*)?$`) })

// tagStart is a tag where a token may start.
var tagStart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[ \t\[\]{},?:-])!`) })

// unquoted is line without its quoted strings and its comment, roughly:
// where a tag could not be.
func unquoted(line string) string {
	var b strings.Builder
	var q rune
	for _, c := range line {
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '#':
			return b.String()
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// nextIndent is the indentation of the first line of lines that holds
// more than spaces and a comment.
func nextIndent(lines []string) (int, bool) {
	for _, l := range lines {
		rest := strings.TrimLeft(l, " ")
		if rest == "" || rest[0] == '#' {
			continue
		}
		return len(l) - len(rest), true
	}
	return 0, false
}

func (r *yamlReader) value(n *yaml.Node, depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, &Unreadable{Why: fmt.Sprintf("it nests deeper than %d levels", maxDepth)}
	}
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return Value{}, &Unreadable{Why: "it uses an anchor or alias (&, *)"}
	}
	if n.Style&yaml.TaggedStyle != 0 || strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return Value{}, &Unreadable{Why: "it gives a value an explicit tag (" + n.Tag + ")"}
	}
	if n.Style&yaml.FlowStyle != 0 && !r.flow {
		defer func() { r.flow = false }()
		r.flow = true
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && !r.oneLine(n) {
			// Folding a quoted string's lines, the two differ on the
			// spaces at a line's end.
			return Value{}, &Unreadable{Why: "a quoted string over several lines"}
		}
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && !r.plainHeader(n) {
			return Value{}, &Unreadable{Why: "a block scalar (| or >) with an indentation indicator or text after it"}
		}
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return Value{kind: String, s: n.Value}, nil
		}
		if !r.flow && !r.plainOnItsLine(n) {
			// Folding a plain value's lines, and where such a value
			// may end, the two part.
			return Value{}, &Unreadable{Why: "a plain value over several lines (" + strconv.Quote(n.Value) + ")"}
		}
		if r.flow && !flowPlain().MatchString(n.Value) {
			return Value{}, &Unreadable{Why: "a plain value in brackets or braces written with other characters than letters, digits and . _ / @ + - (" + strconv.Quote(n.Value) + ")"}
		}
		return resolvePlain(n.Value)
	case yaml.SequenceNode:
		elems := make([]Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := r.value(c, depth+1)
			if err != nil {
				return Value{}, err
			}
			elems = append(elems, v)
		}
		return Value{kind: Array, arr: elems}, nil
	case yaml.MappingNode:
		return r.mapping(n, depth)
	}
	return Value{}, &Unreadable{Why: "a node of an unknown kind"}
}

func (r *yamlReader) mapping(n *yaml.Node, depth int) (Value, error) {
	o := &object{vals: map[string]Value{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return Value{}, &Unreadable{Why: "a key that is not a scalar"}
		}
		if k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && k.Value == "<<" {
			return Value{}, &Unreadable{Why: "a merge key (<<)"}
		}
		kv, err := r.value(k, depth+1)
		if err != nil {
			return Value{}, err
		}
		key, err := keyString(kv)
		if err != nil {
			return Value{}, err
		}
		if _, dup := o.vals[key]; dup {
			return Value{}, &SyntaxError{Parser: "js-yaml", Offset: -1, Msg: "duplicated mapping key " + strconv.Quote(key)}
		}
		vn := n.Content[i+1]
		if !r.flow && vn.Line > k.Line && vn.Column <= k.Column && vn.Kind != yaml.SequenceNode {
			// yaml.v3 takes such a value; js-yaml refuses some.
			return Value{}, &Unreadable{Why: "a value on the lines after its key, not indented more than the key"}
		}
		v, err := r.value(vn, depth+1)
		if err != nil {
			return Value{}, err
		}
		o.set(key, v)
	}
	return Value{kind: Object, obj: o}, nil
}

// oneLine says whether the quoted scalar n closes on the line it opens.
func (r *yamlReader) oneLine(n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(r.lines) {
		return false
	}
	line := []rune(r.lines[n.Line-1])
	i := n.Column - 1
	if i < 0 || i >= len(line) {
		return false
	}
	q := line[i]
	for i++; i < len(line); i++ {
		switch {
		case q == '"' && line[i] == '\\':
			i++
		case line[i] == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case line[i] == q:
			return true
		}
	}
	return false
}

// plainOnItsLine says whether the plain scalar n is all that follows it
// on its line, but for a comment and spaces.
func (r *yamlReader) plainOnItsLine(n *yaml.Node) bool {
	if n.Value == "" {
		return true
	}
	if n.Line < 1 || n.Line > len(r.lines) {
		return false
	}
	line := []rune(r.lines[n.Line-1])
	if n.Column-1 < 0 || n.Column-1 > len(line) {
		return false
	}
	rest := string(line[n.Column-1:])
	if i := strings.Index(rest, " #"); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimRight(rest, " \t\r")
	if rest == n.Value {
		return true
	}
	// A key: its value follows the colon.
	return strings.HasPrefix(rest, n.Value+":")
}

// blockHeader is a block scalar's header the two read alike: | or >, a
// chomping indicator, and a comment after a space.
var blockHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[|>][+-]?(?:[ \t]+#.*|[ \t]*)$`) })

// plainHeader says whether the block scalar n's header is a blockHeader.
func (r *yamlReader) plainHeader(n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(r.lines) {
		return false
	}
	line := []rune(strings.TrimRight(r.lines[n.Line-1], "\r"))
	if n.Column-1 < 0 || n.Column-1 >= len(line) {
		return false
	}
	return blockHeader().MatchString(string(line[n.Column-1:]))
}

// keyString is JavaScript's String of a scalar key, as js-yaml makes
// every key a string.
func keyString(v Value) (string, error) {
	switch v.kind {
	case String:
		return v.s, nil
	case Null:
		return "null", nil
	case Bool:
		return strconv.FormatBool(v.b), nil
	case Number:
		return NumberString(v.n), nil
	}
	return "", &Unreadable{Why: "a key of kind " + v.kind.String()}
}

var (
	yamlFloat = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	})
	yamlDate      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$`) })
	yamlTimestamp = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?$`)
	})
)

// resolvePlain is js-yaml's implicit resolution of a plain scalar in its
// default schema: null, bool, int, float, then timestamp and merge.
func resolvePlain(s string) (Value, error) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return Value{kind: Null}, nil
	case "true", "True", "TRUE":
		return Value{kind: Bool, b: true}, nil
	case "false", "False", "FALSE":
		return Value{kind: Bool}, nil
	}
	if isYAMLInt(s) {
		n, err := yamlInt(s)
		if err != nil {
			return Value{}, err
		}
		return Value{kind: Number, n: n}, nil
	}
	if yamlFloat().MatchString(s) && !strings.HasSuffix(s, "_") {
		return Value{kind: Number, n: yamlFloatValue(s)}, nil
	}
	if yamlDate().MatchString(s) || yamlTimestamp().MatchString(s) {
		return Value{}, &Unreadable{Why: "a timestamp (" + s + "), which js-yaml makes a Date"}
	}
	return Value{kind: String, s: s}, nil
}

// isYAMLInt is js-yaml's resolveYamlInteger (type/int.js).
func isYAMLInt(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	if i < len(s) && s[i] == '0' {
		if i+1 == len(s) {
			return true
		}
		i++
		digit := map[byte]func(byte) bool{
			'b': func(c byte) bool { return c == '0' || c == '1' },
			'x': func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' },
			'o': func(c byte) bool { return c >= '0' && c <= '7' },
		}[s[i]]
		if digit != nil {
			return digitsOf(s[i+1:], digit)
		}
	}
	if i < len(s) && s[i] == '_' {
		return false
	}
	return digitsOf(s[i:], func(c byte) bool { return c >= '0' && c <= '9' })
}

// digitsOf says whether s is digits and underscores, with a digit, not
// ending in an underscore.
func digitsOf(s string, digit func(byte) bool) bool {
	has := false
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			continue
		}
		if !digit(s[i]) {
			return false
		}
		has = true
	}
	return has && s[len(s)-1] != '_'
}

// yamlInt is js-yaml's constructYamlInteger: "0" (after its sign) is 0,
// otherwise sign × parseInt of the digits; -0x0 is -0. Past 2^53 the
// parse may round as V8 does and Go not: unreadable.
func yamlInt(s string) (float64, error) {
	v := strings.ReplaceAll(s, "_", "")
	sign := 1.0
	if v[0] == '-' || v[0] == '+' {
		if v[0] == '-' {
			sign = -1
		}
		v = v[1:]
	}
	if v == "0" {
		return 0, nil
	}
	base := 10
	if len(v) > 1 && v[0] == '0' {
		switch v[1] {
		case 'b':
			base, v = 2, v[2:]
		case 'x':
			base, v = 16, v[2:]
		case 'o':
			base, v = 8, v[2:]
		}
	}
	n, err := strconv.ParseUint(v, base, 64)
	if err != nil || n > 1<<53 {
		return 0, &Unreadable{Why: "an integer past 2^53 (" + s + ")"}
	}
	return sign * float64(n), nil
}

// yamlFloatValue is js-yaml's constructYamlFloat.
func yamlFloatValue(s string) float64 {
	v := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	sign := 1.0
	if v[0] == '-' || v[0] == '+' {
		if v[0] == '-' {
			sign = -1
		}
		v = v[1:]
	}
	switch v {
	case ".inf":
		return sign * math.Inf(1)
	case ".nan":
		return math.NaN()
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		// "1." and "1.e5" are floats to parseFloat and to ParseFloat
		// alike; what neither reads is NaN, as parseFloat makes it.
		return math.NaN()
	}
	return sign * n
}
