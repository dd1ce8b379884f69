// Package jsontext checks JSON text in one pass of its own, byte by byte
// in a loop rather than through encoding/json's state function a byte,
// for the readers that take the shapes their peers write without a
// decoder: the JSON-RPC connection's message (internal/jsonrpc's
// quickMessage) and MCP's (internal/mcpwire's Scan). Each walks an
// object's members with a Checker and leaves to its decoder any text the
// Checker refuses; what the Checker takes, encoding/json takes (FuzzChecker).
//
// It imports nothing of the module, so that the packages at the floor
// can share it.
package jsontext

import (
	"bytes"
	"encoding/binary"
)

// Checker checks the JSON text b from its place on.
type Checker struct {
	b        []byte
	i        int
	maxDepth int
}

// NewChecker checks b from its start, following nesting maxDepth deep
// at most (a deeper value is refused).
func NewChecker(b []byte, maxDepth int) Checker {
	return Checker{b: b, maxDepth: maxDepth}
}

// Pos is the checker's place in its text.
func (c *Checker) Pos() int { return c.i }

// Space passes over white space.
func (c *Checker) Space() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// Byte reads ch, if it is next.
func (c *Checker) Byte(ch byte) bool {
	if c.i < len(c.b) && c.b[c.i] == ch {
		c.i++
		return true
	}
	return false
}

// End reports whether only white space is left.
func (c *Checker) End() bool {
	c.Space()
	return c.i == len(c.b)
}

// Value checks one value, at depth levels of nesting.
func (c *Checker) Value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '"':
		return c.Str()
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

func (c *Checker) object(depth int) bool {
	if depth > c.maxDepth {
		return false
	}
	c.i++ // '{'
	c.Space()
	if c.Byte('}') {
		return true
	}
	for {
		c.Space()
		if !c.Str() {
			return false
		}
		c.Space()
		if !c.Byte(':') {
			return false
		}
		c.Space()
		if !c.Value(depth) {
			return false
		}
		c.Space()
		if c.Byte(',') {
			continue
		}
		return c.Byte('}')
	}
}

func (c *Checker) array(depth int) bool {
	if depth > c.maxDepth {
		return false
	}
	c.i++ // '['
	c.Space()
	if c.Byte(']') {
		return true
	}
	for {
		c.Space()
		if !c.Value(depth) {
			return false
		}
		c.Space()
		if c.Byte(',') {
			continue
		}
		return c.Byte(']')
	}
}

// inString marks the bytes that stand for themselves in a JSON string:
// not a quote, a backslash or a control character. Bytes over 0x7F are
// taken as they are, as encoding/json does (a reader that needs UTF-8
// checks it).
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Str checks a string, its quotes included.
func (c *Checker) Str() bool {
	if !c.Byte('"') {
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
				if !hex4(b, i+2) {
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

// hex4 reports whether b[i:] begins with four hex digits.
func hex4(b []byte, i int) bool {
	if i+4 > len(b) {
		return false
	}
	for _, h := range b[i : i+4] {
		if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
			return false
		}
	}
	return true
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
func (c *Checker) number() bool {
	c.Byte('-')
	switch {
	case c.Byte('0'):
	case c.i < len(c.b) && c.b[c.i] >= '1' && c.b[c.i] <= '9':
		c.digits()
	default:
		return false
	}
	if c.Byte('.') && !c.digits() {
		return false
	}
	if c.Byte('e') || c.Byte('E') {
		if !c.Byte('+') {
			c.Byte('-')
		}
		if !c.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more.
func (c *Checker) digits() bool {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}

func (c *Checker) literal(word string) bool {
	if !bytes.HasPrefix(c.b[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	return true
}

// Members reads an object at c's place, white space before it allowed,
// calling member with each member's name (its text between the quotes)
// and value (its JSON text, checked); a name with an escape, text that
// is not JSON, or member's false ends it with false. Readers that take
// a message's members in one pass (MCP's, JSON-RPC's) walk objects so.
func (c *Checker) Members(member func(key, value []byte) bool) bool {
	c.Space()
	if !c.Byte('{') {
		return false
	}
	c.Space()
	if c.Byte('}') {
		return true
	}
	for {
		start := c.Pos()
		if !c.Str() {
			return false
		}
		key := c.b[start+1 : c.Pos()-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		c.Space()
		if !c.Byte(':') {
			return false
		}
		c.Space()
		start = c.Pos()
		if !c.Value(0) || !member(key, c.b[start:c.Pos()]) {
			return false
		}
		c.Space()
		if c.Byte('}') {
			return true
		}
		if !c.Byte(',') {
			return false
		}
		c.Space()
	}
}

// Text is the text the checker checks.
func (c *Checker) Text() []byte { return c.b }
