// The JSON reader under decodeManifest: one pass over the bytes, each
// value checked as encoding/json checks it, giving up (bad) wherever the
// two could differ. See manifest_decode.go for why it exists.

package extension

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// manifestReader reads JSON values from data at i. Once bad is set (the
// reader gave up), every method does nothing.
type manifestReader struct {
	data  []byte
	i     int
	depth int
	bad   bool
	// keys are the problems of the keys nothing reads.
	keys keyProblems
}

// fieldSet records which fields of one object were given, to give up on
// a field given twice.
type fieldSet uint32

func (s *fieldSet) add(i int) bool {
	if *s&(1<<i) != 0 {
		return false
	}
	*s |= 1 << i
	return true
}

func indexOf(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// unknown gives up on a key that encoding/json would match to one of
// keys regardless of case.
func (r *manifestReader) unknown(key []byte, keys []string) {
	for _, k := range keys {
		if strings.EqualFold(string(key), k) {
			r.bad = true
		}
	}
}

// fields reads an object whose fields are keys: field is called with the
// index of each key given (once each), and other members are skipped,
// after a call of other with the key when other is not nil. null leaves
// the fields as they are, as encoding/json does.
func (r *manifestReader) fields(keys []string, field func(i int), other func(key string)) {
	if r.null() {
		return
	}
	var seen fieldSet
	r.object(func(key []byte) {
		i := indexOf(keys, key)
		switch {
		case i < 0:
			r.unknown(key, keys)
			if other != nil && !r.bad {
				other(string(key))
			}
			r.skip()
		case !seen.add(i):
			r.bad = true
		default:
			field(i)
		}
	})
}

func (r *manifestReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next is the first byte of the next value, or 0 at the end.
func (r *manifestReader) next() byte {
	r.space()
	if r.bad || r.i >= len(r.data) {
		r.bad = true
		return 0
	}
	return r.data[r.i]
}

// null reads a null if one is next.
func (r *manifestReader) null() bool {
	if r.next() == 'n' {
		r.literal("null")
		return true
	}
	return false
}

func (r *manifestReader) literal(lit string) {
	if r.bad || len(r.data)-r.i < len(lit) || string(r.data[r.i:r.i+len(lit)]) != lit {
		r.bad = true
		return
	}
	r.i += len(lit)
}

// object reads an object, calling member after each key with the reader
// at the member's value, which member must read.
func (r *manifestReader) object(member func(key []byte)) { r.objectOf(true, member) }

// objectOf is object; the keys are decoded only with decodeKeys (member
// then gets nil).
func (r *manifestReader) objectOf(decodeKeys bool, member func(key []byte)) {
	r.elements('{', '}', func() {
		if r.next() != '"' {
			r.bad = true
			return
		}
		key := r.string(decodeKeys)
		if r.next() != ':' {
			r.bad = true
			return
		}
		r.i++
		member(key)
	})
}

// array reads an array, calling elem with the reader at each element,
// which elem must read.
func (r *manifestReader) array(elem func()) { r.elements('[', ']', elem) }

// elements reads an object or an array, open and close its brackets,
// calling elem with the reader at each member or element, which elem
// must read.
func (r *manifestReader) elements(open, close byte, elem func()) {
	if r.next() != open {
		r.bad = true
		return
	}
	r.i++
	if r.next() == close {
		r.i++
		return
	}
	for !r.bad {
		elem()
		switch r.next() {
		case ',':
			r.i++
		case close:
			r.i++
			return
		default:
			r.bad = true
		}
	}
}

// list reads null (nil) or an array of T, each element read by elem into
// a zero T, as encoding/json decodes a slice: [] is an empty slice.
func list[T any](r *manifestReader, elem func(*T)) []T {
	if r.null() {
		return nil
	}
	out := []T{}
	r.array(func() {
		var v T
		elem(&v)
		out = append(out, v)
	})
	return out
}

// str reads a string into dst, or null, which leaves dst as it is.
func (r *manifestReader) str(dst *string) {
	if r.null() {
		return
	}
	if r.next() != '"' {
		r.bad = true
		return
	}
	if s := r.string(true); !r.bad {
		*dst = string(s)
	}
}

// string reads the string at i. With decode, it returns its content,
// valid UTF-8 with its escapes replaced, and gives up on a string that
// encoding/json would read differently (invalid UTF-8, which it replaces)
// or through a path not written here (\u escapes, whose surrogates it
// pairs in its own way); without, it only checks that the string is
// valid JSON.
func (r *manifestReader) string(decode bool) []byte {
	start := r.i + 1
	escaped, plain := false, true
	d := r.data
	for i := start; i < len(d); i++ {
		c := d[i]
		switch {
		case c == '"':
			s := d[start:i]
			r.i = i + 1
			switch {
			case !decode:
				return nil
			case !plain && !utf8.Valid(s):
				r.bad = true
				return nil
			case escaped:
				return unescape(s)
			}
			return s
		case c == '\\':
			escaped = true
			i++
			switch {
			case i >= len(d):
			case strings.IndexByte(`"\\/bfnrt`, d[i]) >= 0:
				continue
			case d[i] == 'u' && i+4 < len(d) && isHex(d[i+1]) && isHex(d[i+2]) && isHex(d[i+3]) && isHex(d[i+4]):
				i += 4
				if !decode {
					continue
				}
			}
			r.bad = true
			return nil
		case c < 0x20:
			r.bad = true
			return nil
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	r.bad = true
	return nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// unescape replaces the escapes of s, each a backslash and one of
// "\/bfnrt.
func unescape(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++
			c = s[i]
			switch c {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
		}
		out = append(out, c)
	}
	return out
}

// skip reads any value, checking that it is valid JSON, and returns it.
func (r *manifestReader) skip() []byte {
	start := r.next()
	if r.bad {
		return nil
	}
	from := r.i
	switch {
	case start == '{':
		r.nest(func() { r.objectOf(false, func([]byte) { r.skip() }) })
	case start == '[':
		r.nest(func() { r.array(func() { r.skip() }) })
	case start == '"':
		r.string(false)
	case start == 't':
		r.literal("true")
	case start == 'f':
		r.literal("false")
	case start == 'n':
		r.literal("null")
	default:
		r.number()
	}
	if r.bad {
		return nil
	}
	return r.data[from:r.i]
}

// nest reads a nested value, giving up where encoding/json would fail
// for depth (10,000); manifests nest a few levels.
func (r *manifestReader) nest(read func()) {
	if r.depth++; r.depth > 1000 {
		r.bad = true
		return
	}
	read()
	r.depth--
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *manifestReader) number() {
	d := r.data
	i := r.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		r.bad = true
		return
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			r.bad = true
			return
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			r.bad = true
			return
		}
	}
	r.i = i
}

// raw reads any value as encoding/json fills a json.RawMessage: a copy of
// its bytes ("null" for null).
func (r *manifestReader) raw() json.RawMessage {
	v := r.skip()
	if r.bad {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// rawMap reads null (nil) or an object into a map of raw values.
func (r *manifestReader) rawMap() map[string]json.RawMessage {
	if r.null() {
		return nil
	}
	m := map[string]json.RawMessage{}
	r.object(func(key []byte) { m[string(key)] = r.raw() })
	return m
}

// boolean reads true or false (ok), or null (not ok, as encoding/json
// leaves a bool as it is and sets a *bool to nil).
func (r *manifestReader) boolean() (v, ok bool) {
	switch r.next() {
	case 'n':
		r.literal("null")
		return false, false
	case 't':
		r.literal("true")
		return true, true
	case 'f':
		r.literal("false")
		return false, true
	}
	r.bad = true
	return false, false
}
