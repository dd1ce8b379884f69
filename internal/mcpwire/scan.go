package mcpwire

import (
	"bytes"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/jsontext"
)

// The one-pass reader of the fast paths. Read decodes a message with the
// SDK's decoder, which is right for every input but costs a call more
// than the rest of its forwarding (bench/extmcp): the members it names
// are copied out, the params decoded again by ReadParams, a
// progressToken a third time. Scan and ScanParams read the same members
// in one pass over the text, checking that the whole of it is JSON, and
// give them as slices of it, copying nothing. They take only the plain
// shape a client or a server writes: a member's name without escapes,
// each member they read once, jsonrpc, method and name strings without
// escapes, the text valid UTF-8, nesting at most maxDepth deep. Anything
// else (ok false) is for Read and ReadParams, which decide it as the SDK
// does, refusals included; where Scan takes a text, it reads what Read
// reads of it (FuzzScan). The text is checked by internal/jsontext, the
// checker internal/jsonrpc's reader of messages uses too.

// maxDepth bounds the nesting Scan follows; deeper text is Read's.
const maxDepth = 64

// Scan reads data, one JSON object with nothing but white space around
// it, as Read does, in one pass; its raw members are slices of data. ok
// is false for any text outside the plain shape above, which Read is to
// decide.
func Scan(data []byte) (m Message, ok bool) {
	if !utf8.Valid(data) {
		return m, false
	}
	c := jsontext.NewChecker(data, maxDepth)
	var seen uint8
	ok = c.Members(func(key []byte, v []byte) bool {
		var bit uint8
		switch string(key) {
		case "jsonrpc":
			bit = 1
			str, ok := plainString(v)
			if !ok {
				return false
			}
			m.JSONRPC = internVersion(str)
		case "id":
			bit, m.ID = 2, v
		case "method":
			bit = 4
			str, ok := plainString(v)
			if !ok {
				return false // null, or escaped: Read's
			}
			m.RawMethod, m.Method, m.HasMethod = v, internMethod(str), true
		case "params":
			bit, m.Params = 8, v
		case "result":
			bit, m.Result = 16, v
		case "error":
			bit, m.Error = 32, v
		default:
			return true
		}
		if seen&bit != 0 {
			return false // the last of two wins in Read: it decides
		}
		seen |= bit
		return true
	})
	return m, ok && c.End()
}

// ScanParams reads raw, a message's params, as ReadParams does, in one
// pass; its raw members are slices of raw. ok is false for none (raw
// empty: ReadParams reads that as no members) and for any text outside
// Scan's plain shape, which ReadParams is to decide.
func ScanParams(raw []byte) (p Params, ok bool) {
	if len(raw) == 0 || !utf8.Valid(raw) {
		return p, false
	}
	c := jsontext.NewChecker(raw, maxDepth)
	var seen uint8
	ok = c.Members(func(key []byte, v []byte) bool {
		var bit uint8
		switch string(key) {
		case "name":
			bit = 1
			str, ok := plainString(v)
			if !ok {
				return false
			}
			p.Name = string(str)
		case "arguments":
			bit, p.Arguments = 2, v
		case "_meta":
			bit, p.Meta = 4, v
		case "cursor":
			bit = 8
			if string(v) != "null" {
				str, ok := plainString(v)
				if !ok {
					return false
				}
				c := string(str)
				p.Cursor = &c
			}
		case "inputResponses":
			bit, p.InputResponses = 16, v
		case "requestState":
			bit, p.RequestState = 32, v
		case "requestId":
			bit, p.RequestID = 64, v
		case "protocolVersion":
			bit = 128
			str, ok := plainString(v)
			if !ok {
				return false
			}
			p.ProtocolVersion = string(str)
		default:
			return true
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	return p, ok && c.End()
}

// ScanProgressToken is the progressToken of meta, a request's _meta, as
// Params.ProgressToken decodes it, when it is a plain string (a string)
// or a whole number of at most 15 digits (a float64, as JSON numbers
// decode into an interface); nil when meta has none. ok is false for any
// other token or text, which ProgressToken is to decide.
func ScanProgressToken(meta []byte) (token any, ok bool) {
	if len(meta) == 0 {
		return nil, true
	}
	if !utf8.Valid(meta) {
		return nil, false
	}
	c := jsontext.NewChecker(meta, maxDepth)
	seen := false
	ok = c.Members(func(key []byte, v []byte) bool {
		if string(key) != "progressToken" {
			return true
		}
		if seen {
			return false
		}
		seen = true
		if str, ok := plainString(v); ok {
			token = string(str)
			return true
		}
		if string(v) == "null" {
			return true
		}
		if n, ok := smallInt(v); ok {
			token = float64(n)
			return true
		}
		return false
	})
	return token, ok && c.End()
}

// plainString is the text of v, a JSON string without escapes; ok is
// false for anything else.
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// smallInt is v, a JSON number that is a whole number of at most 15
// digits (which a float64 holds exactly), as an integer.
func smallInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 15 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		if n == 0 {
			return 0, false // -0, which decodes to a float64's -0
		}
		n = -n
	}
	return n, true
}

// internVersion is s as a string, without a copy for JSON-RPC's 2.0.
func internVersion(s []byte) string {
	if string(s) == "2.0" {
		return "2.0"
	}
	return string(s)
}

// internMethod is s as a string, without a copy for the methods the
// fast paths look for.
func internMethod(s []byte) string {
	switch string(s) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/progress":
		return "notifications/progress"
	}
	return string(s)
}
