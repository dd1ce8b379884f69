package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// quickMessage is json.Unmarshal(body, m) for a message as peers write
// it: one object whose members of message's are each there once, spelt
// as the protocol spells them, and of their types. It checks the whole
// text in one pass of its own, which takes a fraction of encoding/json's
// two (its check of the text, then its decoding, which scans a result
// again to skip it): a language server's answer of a thousand locations
// is 150 KB, read once by gemkit's client of the server and once more by
// a broker's client. It declines (false) anything else, m then partly
// filled in: text that is not JSON, a member of the wrong type, repeated
// or spelt otherwise (encoding/json matches names without regard to
// case), nesting deeper than maxQuickDepth. json.Unmarshal then decides,
// in its words. What it accepts, encoding/json accepts and decodes alike
// (FuzzQuickMessage).
func quickMessage(body []byte, m *message) bool {
	c := checker{b: body}
	c.space()
	if !c.byte('{') {
		return false
	}
	var seen [6]bool
	c.space()
	if c.byte('}') {
		return c.end()
	}
	for {
		c.space()
		start := c.i
		if !c.str() {
			return false
		}
		key := body[start+1 : c.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		c.space()
		if !c.byte(':') {
			return false
		}
		c.space()
		start = c.i
		if !c.value(0) {
			return false
		}
		if !setMember(m, &seen, key, body[start:c.i]) {
			return false
		}
		c.space()
		if c.byte(',') {
			continue
		}
		if c.byte('}') {
			return c.end()
		}
		return false
	}
}

// memberNames are message's members, in the order of setMember's seen.
var memberNames = [6]string{"jsonrpc", "id", "method", "params", "result", "error"}

// setMember sets m's member key to the JSON value v (checked), as
// json.Unmarshal would; false when only encoding/json can say.
func setMember(m *message, seen *[6]bool, key, v []byte) bool {
	n := -1
	for i, name := range memberNames {
		if string(key) == name {
			n = i
			break
		}
		if bytes.EqualFold(key, []byte(name)) {
			return false
		}
	}
	if n < 0 {
		return true // a member message has not: ignored
	}
	if seen[n] {
		return false
	}
	seen[n] = true
	var ok bool
	switch n {
	case 0:
		m.JSONRPC, ok = quickString(v)
		return ok
	case 1:
		m.ID = bytes.Clone(v)
	case 2:
		m.Method, ok = quickString(v)
		return ok
	case 3:
		m.Params = bytes.Clone(v)
	case 4:
		m.Result = bytes.Clone(v)
	case 5:
		if string(v) == "null" {
			return true
		}
		return v[0] == '{' && json.Unmarshal(v, &m.Error) == nil
	}
	return true
}

// quickString reads a JSON string (null leaves a string as it was: "").
func quickString(v []byte) (string, bool) {
	switch {
	case string(v) == "null":
		return "", true
	case v[0] != '"':
		return "", false
	case bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v):
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// maxQuickDepth bounds the nesting quickMessage follows; encoding/json
// takes deeper texts (to 10,000).
const maxQuickDepth = 200

// checker checks JSON text as encoding/json's scanner does, byte by byte
// in a loop of its own rather than through a state function a byte.
type checker struct {
	b []byte
	i int
}

// inString marks the bytes that stand for themselves in a JSON string:
// not a quote, a backslash or a control character. Bytes over 0x7F are
// taken as they are, as encoding/json does (CheckJSONText checks UTF-8).
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (c *checker) space() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// byte reads ch, if it is next.
func (c *checker) byte(ch byte) bool {
	if c.i < len(c.b) && c.b[c.i] == ch {
		c.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (c *checker) end() bool {
	c.space()
	return c.i == len(c.b)
}

// value checks one value, at depth levels of nesting.
func (c *checker) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '"':
		return c.str()
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number()
	}
	return false
}

func (c *checker) object(depth int) bool {
	if depth > maxQuickDepth {
		return false
	}
	c.i++ // '{'
	c.space()
	if c.byte('}') {
		return true
	}
	for {
		c.space()
		if !c.str() {
			return false
		}
		c.space()
		if !c.byte(':') {
			return false
		}
		c.space()
		if !c.value(depth) {
			return false
		}
		c.space()
		if c.byte(',') {
			continue
		}
		return c.byte('}')
	}
}

func (c *checker) array(depth int) bool {
	if depth > maxQuickDepth {
		return false
	}
	c.i++ // '['
	c.space()
	if c.byte(']') {
		return true
	}
	for {
		c.space()
		if !c.value(depth) {
			return false
		}
		c.space()
		if c.byte(',') {
			continue
		}
		return c.byte(']')
	}
}

// str checks a string, its quotes included.
func (c *checker) str() bool {
	if !c.byte('"') {
		return false
	}
	b := c.b
	i := c.i
	for {
		// Eight bytes at a time while all stand for themselves (a URI
		// is 50), then byte by byte.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if hasByte(w, '"')|hasByte(w, '\\')|hasLess(w, 0x20) != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && inString[b[i]] {
			i++
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			c.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		default:
			return false // a control character
		}
	}
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// hasByte is not 0 when one of the eight bytes of w is c.
func hasByte(w uint64, c byte) uint64 {
	x := w ^ (ones * uint64(c))
	return (x - ones) &^ x & highs
}

// hasLess is not 0 when one of the eight bytes of w is less than n
// (n at most 0x80).
func hasLess(w uint64, n byte) uint64 {
	return (w - ones*uint64(n)) &^ w & highs
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *checker) number() bool {
	c.byte('-')
	switch {
	case c.byte('0'):
	case c.i < len(c.b) && c.b[c.i] >= '1' && c.b[c.i] <= '9':
		c.digits()
	default:
		return false
	}
	if c.byte('.') && !c.digits() {
		return false
	}
	if c.byte('e') || c.byte('E') {
		if !c.byte('+') {
			c.byte('-')
		}
		if !c.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more.
func (c *checker) digits() bool {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}

func (c *checker) literal(word string) bool {
	if !bytes.HasPrefix(c.b[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	return true
}
