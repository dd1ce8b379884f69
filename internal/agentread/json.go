package agentread

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// SyntaxError says that a text is one the agent's parser refuses
// (JSON.parse, js-yaml): the agent reads nothing of it, as gemkit.
type SyntaxError struct {
	// Parser is the agent's parser: "JSON.parse" or "js-yaml".
	Parser string
	// Offset is the byte where JSON's reading stopped (-1: not told).
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s refuses it at byte %d: %s", e.Parser, e.Offset, e.Msg)
	}
	return e.Parser + " refuses it: " + e.Msg
}

// Unreadable says that gemkit cannot read a text as the agent will,
// though the agent may read it: the caller must not act on its own
// reading (it holds the extension, saying Why).
type Unreadable struct{ Why string }

func (e *Unreadable) Error() string {
	return "gemkit cannot read it exactly as the agent does: " + e.Why
}

// IsUnreadable says whether err is (or wraps) an [Unreadable].
func IsUnreadable(err error) bool {
	var u *Unreadable
	return errors.As(err, &u)
}

// Why is the reason of the [Unreadable] err is or wraps, "" when none.
func Why(err error) string {
	var u *Unreadable
	if errors.As(err, &u) {
		return u.Why
	}
	return ""
}

// maxDepth bounds nesting: deeper text is refused as unreadable rather
// than followed (V8's parser has no such bound).
const maxDepth = 4096

// ParseJSON reads text as Node does with fs.readFile(path, "utf-8")
// followed by JSON.parse. Text that is not valid UTF-8 (Node would
// replace the bad bytes), a string with a lone surrogate escape (which
// JavaScript keeps and Go cannot), and nesting past 4,096 levels are
// [Unreadable]; text JSON.parse refuses, a leading byte order mark
// included, is a [SyntaxError].
func ParseJSON(text []byte) (Value, error) { return parseJSON(text, false) }

func parseJSON(text []byte, unique bool) (Value, error) {
	if !utf8.Valid(text) {
		return Value{}, &Unreadable{Why: "it is not valid UTF-8 (Node replaces the bad bytes, and gemkit does not guess how)"}
	}
	p := &jsonParser{b: text, unique: unique}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.i != len(p.b) {
		return Value{}, p.fail("unexpected text after the value")
	}
	return v, nil
}

type jsonParser struct {
	b []byte
	i int
	// unique refuses a member given twice in one object (ParseJSONUnique).
	unique bool
}

func (p *jsonParser) fail(msg string) error {
	return &SyntaxError{Parser: "JSON.parse", Offset: p.i, Msg: msg}
}

// space passes JSON's white space: tab, line feed, carriage return and
// space, nothing else (not a byte order mark).
func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (Value, error) {
	if p.i >= len(p.b) {
		return Value{}, p.fail("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return Value{kind: String, s: s}, err
	case c == 't':
		return Value{kind: Bool, b: true}, p.literal("true")
	case c == 'f':
		return Value{kind: Bool}, p.literal("false")
	case c == 'n':
		return Value{kind: Null}, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return Value{}, p.fail("unexpected character")
}

func (p *jsonParser) literal(word string) error {
	if !strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+len(word))]), word) {
		return p.fail("unexpected token")
	}
	p.i += len(word)
	return nil
}

func (p *jsonParser) object(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, &Unreadable{Why: fmt.Sprintf("it nests deeper than %d levels", maxDepth)}
	}
	p.i++ // {
	o := &object{vals: map[string]Value{}}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return Value{kind: Object, obj: o}, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return Value{}, p.fail("expected a property name")
		}
		at := p.i
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if _, dup := o.vals[key]; dup && p.unique {
			return Value{}, &DuplicateKeyError{Key: key, Offset: at}
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return Value{}, p.fail("expected ':'")
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		o.set(key, v)
		p.space()
		if p.i >= len(p.b) {
			return Value{}, p.fail("unexpected end in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return Value{kind: Object, obj: o}, nil
		default:
			return Value{}, p.fail("expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, &Unreadable{Why: fmt.Sprintf("it nests deeper than %d levels", maxDepth)}
	}
	p.i++ // [
	elems := []Value{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return Value{kind: Array, arr: elems}, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		elems = append(elems, v)
		p.space()
		if p.i >= len(p.b) {
			return Value{}, p.fail("unexpected end in an array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return Value{kind: Array, arr: elems}, nil
		default:
			return Value{}, p.fail("expected ',' or ']'")
		}
	}
}

// str reads a string at p.i, its quotes included.
func (p *jsonParser) str() (string, error) {
	p.i++ // "
	start := p.i
	// The plain run: no escape, no control character.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	var sb strings.Builder
	sb.Write(p.b[start:p.i])
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return sb.String(), nil
		case c < 0x20:
			return "", p.fail("a control character in a string")
		case c == '\\':
			if err := p.escape(&sb); err != nil {
				return "", err
			}
		default:
			sb.WriteByte(c)
			p.i++
		}
	}
	return "", p.fail("unterminated string")
}

func (p *jsonParser) escape(sb *strings.Builder) error {
	p.i++ // backslash
	if p.i >= len(p.b) {
		return p.fail("unterminated string")
	}
	c := p.b[p.i]
	p.i++
	switch c {
	case '"', '\\', '/':
		sb.WriteByte(c)
	case 'b':
		sb.WriteByte('\b')
	case 'f':
		sb.WriteByte('\f')
	case 'n':
		sb.WriteByte('\n')
	case 'r':
		sb.WriteByte('\r')
	case 't':
		sb.WriteByte('\t')
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			lo, ok := p.lowSurrogate(r)
			if !ok {
				return &Unreadable{Why: "a string holds a lone surrogate escape (\\u" + strconv.FormatInt(int64(r), 16) + "), which JavaScript keeps and gemkit cannot"}
			}
			r = utf16.DecodeRune(r, lo)
		}
		sb.WriteRune(r)
	default:
		p.i--
		return p.fail("a bad escape in a string")
	}
	return nil
}

// lowSurrogate reads the \uDC00-\uDFFF escape that completes the high
// surrogate hi, when it follows.
func (p *jsonParser) lowSurrogate(hi rune) (rune, bool) {
	if hi >= 0xDC00 || p.i+6 > len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
		return 0, false
	}
	save := p.i
	p.i += 2
	lo, err := p.hex4()
	if err != nil || lo < 0xDC00 || lo > 0xDFFF {
		p.i = save
		return 0, false
	}
	return lo, true
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.fail("a short \\u escape")
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.fail("a bad \\u escape")
		}
		r = r<<4 | rune(d)
	}
	p.i += 4
	return r, nil
}

// number reads JSON's number grammar and rounds it to the nearest
// float64, as JavaScript does; past the range it is ±Infinity.
func (p *jsonParser) number() (Value, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return Value{}, p.fail("a bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return Value{}, p.fail("a bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return Value{}, p.fail("a bad number")
		}
	}
	n, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Value{}, p.fail("a bad number")
	}
	if math.IsNaN(n) {
		return Value{}, p.fail("a bad number")
	}
	return Value{kind: Number, n: n, text: string(p.b[start:p.i])}, nil
}

func (p *jsonParser) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
