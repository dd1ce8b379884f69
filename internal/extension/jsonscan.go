package extension

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// eachField calls fn with every top-level key of the JSON object data and
// the raw bytes of its value. data must already be known to be valid JSON
// (a json.Unmarshal of it succeeded): this is a quick walk over the bytes
// that lets the manifest reader find the fields it does not name without
// decoding the whole document a second time. It reports false when data
// is not an object.
func eachField(data []byte, fn func(key string, raw json.RawMessage)) bool {
	return eachOf(data, '{', '}', func(i int) (int, bool) {
		if data[i] != '"' {
			return 0, false
		}
		end := skipString(data, i)
		keyRaw := data[i:end]
		var key string
		if bytes.IndexByte(keyRaw, '\\') < 0 && utf8.Valid(keyRaw) {
			// Plain key; escapes and invalid UTF-8 (which encoding/json
			// turns into U+FFFD) take the decoder.
			key = string(keyRaw[1 : len(keyRaw)-1])
		} else if json.Unmarshal(keyRaw, &key) != nil {
			return 0, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		fn(key, data[i:vend:vend])
		return vend, true
	})
}

// eachElement calls fn with the raw bytes of every element of the JSON
// array data, which must be valid JSON, as for eachField. It reports
// false when data is not an array.
func eachElement(data []byte, fn func(raw json.RawMessage)) bool {
	return eachOf(data, '[', ']', func(i int) (int, bool) {
		end := skipValue(data, i)
		fn(data[i:end:end])
		return end, true
	})
}

// eachOf walks the object or array that data holds, open and close its
// brackets: elem reads the member or element that starts at i and
// returns where it ends, or false to give up. It reports false when data
// is not such a value or elem gave up.
func eachOf(data []byte, open, close byte, elem func(i int) (end int, ok bool)) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != open {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == close {
		return true
	}
	for i < len(data) {
		end, ok := elem(i)
		if !ok {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case close:
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just after the string that starts at i.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the index just after the value that starts at i.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
