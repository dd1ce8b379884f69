package ide

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// An LSPRequestResult carries the servers' answers as they came, 150 KB
// for a thousand references. It encodes and reads itself so that the
// answers pass through each hop (a language client, gemkit's broker, its
// client) as bytes: encoding/json would scan each twice more to read it
// (once to check the text, once to skip the answer) and once more to
// write it. Both agree with encoding/json's way for the type, which
// reads what they decline (FuzzLSPRequestResult).

// MarshalJSON writes r as encoding/json writes the struct, each answer's
// Result as it is: it was read as JSON (encoding/json, calling this,
// compacts the whole once more; internal/jsonrpc writes it as it is).
func (r LSPRequestResult) MarshalJSON() ([]byte, error) {
	size := 64
	for _, a := range r.Answers {
		size += len(a.Result) + 64
	}
	b := make([]byte, 0, size)
	b = append(b, `{"clients":`...)
	b, err := appendJSON(b, r.Clients)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"answers":`...)
	if r.Answers == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range r.Answers {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"client":`...)
			b, _ = appendJSON(b, a.Client)
			if len(a.Result) > 0 {
				b = append(b, `,"result":`...)
				b = append(b, a.Result...)
			}
			if a.Error != nil {
				b = append(b, `,"error":`...)
				b, _ = appendJSON(b, a.Error)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b, _ = appendJSON(b, r.Reason)
	}
	return append(b, '}'), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	return append(b, out...), err
}

// UnmarshalJSON reads the JSON text b (valid, as json.Unmarshaler's
// contract has it) into r, each answer's Result found by skipping it
// rather than scanned by encoding/json.
func (r *LSPRequestResult) UnmarshalJSON(b []byte) error {
	if r.Clients == nil && r.Answers == nil && r.Reason == "" {
		if readRequestResult(b, r) {
			return nil
		}
		*r = LSPRequestResult{}
	}
	type plain LSPRequestResult // without these methods
	return json.Unmarshal(b, (*plain)(r))
}

// readRequestResult reads an object whose members are each there once,
// spelt as the protocol spells them; false otherwise (r then partly
// filled in).
func readRequestResult(b []byte, r *LSPRequestResult) bool {
	seen := map[string]bool{}
	return eachMember(b, func(name string, v []byte) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		switch name {
		case "clients":
			return json.Unmarshal(v, &r.Clients) == nil
		case "reason":
			return json.Unmarshal(v, &r.Reason) == nil
		case "answers":
			if string(v) == "null" {
				return true
			}
			if v[0] != '[' {
				return false
			}
			r.Answers = make([]LSPAnswer, 0, 1)
			return eachElement(v, func(v []byte) bool {
				var a LSPAnswer
				ok := v[0] == '{' && readAnswer(v, &a)
				r.Answers = append(r.Answers, a)
				return ok
			})
		}
		return !foldsTo(name, "clients", "reason", "answers")
	})
}

func readAnswer(b []byte, a *LSPAnswer) bool {
	seen := map[string]bool{}
	return eachMember(b, func(name string, v []byte) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		switch name {
		case "client":
			return json.Unmarshal(v, &a.Client) == nil
		case "result":
			a.Result = bytes.Clone(v)
			return true
		case "error":
			return json.Unmarshal(v, &a.Error) == nil
		}
		return !foldsTo(name, "client", "result", "error")
	})
}

// foldsTo reports whether encoding/json would take name for one of
// names, which it matches without regard to case.
func foldsTo(name string, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold([]byte(name), []byte(n)) {
			return true
		}
	}
	return false
}

// eachMember calls f with each member of the object b (valid JSON) until
// f returns false; false also for a name with an escape.
func eachMember(b []byte, f func(name string, v []byte) bool) bool {
	i := space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = space(b, i+1)
	if b[i] == '}' {
		return true
	}
	for {
		end := stringEnd(b, i)
		name := b[i+1 : end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		i = space(b, end+1) // at ':'
		i = space(b, i+1)
		vend := skipValue(b, i)
		if !f(string(name), b[i:vend]) {
			return false
		}
		i = space(b, vend)
		if b[i] == '}' {
			return true
		}
		i = space(b, i+1) // after ','
	}
}

// eachElement calls f with each element of the array b (valid JSON)
// until f returns false.
func eachElement(b []byte, f func(v []byte) bool) bool {
	i := space(b, 1)
	if b[i] == ']' {
		return true
	}
	for {
		end := skipValue(b, i)
		if !f(b[i:end]) {
			return false
		}
		i = space(b, end)
		if b[i] == ']' {
			return true
		}
		i = space(b, i+1)
	}
}

func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index of the closing quote of the string whose
// opening quote is at b[i].
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		// Eight bytes at a time while none is a quote or a backslash
		// (a URI is 50), then byte by byte.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if hasByte(w, '"')|hasByte(w, '\\') != 0 {
				break
			}
			i += 8
		}
		for b[i] != '"' && b[i] != '\\' {
			i++
		}
		if b[i] == '"' {
			return i
		}
		i++ // the escaped byte
	}
}

// hasByte is not 0 when one of the eight bytes of w is c.
func hasByte(w uint64, c byte) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w ^ (ones * uint64(c))
	return (x - ones) &^ x & highs
}

// structural marks the bytes skipValue stops at in a container.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipValue is the end of the value at b[i] (valid JSON).
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i) + 1
	case '{', '[':
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
	depth := 0
	for ; ; i++ {
		for !structural[b[i]] {
			i++
		}
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '{', '[':
			depth++
		default: // '}', ']'
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
}
