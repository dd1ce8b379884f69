package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/jsontext"
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
// case), nesting deeper than maxQuickDepth. The text is checked by
// internal/jsontext, which MCP's reader shares. json.Unmarshal then decides,
// in its words. What it accepts, encoding/json accepts and decodes alike
// (FuzzQuickMessage).
func quickMessage(body []byte, m *message) bool {
	c := jsontext.NewChecker(body, maxQuickDepth)
	var seen [6]bool
	return c.Members(func(key, v []byte) bool { return setMember(m, &seen, key, v) }) && c.End()
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
