package geminisettings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Gemini CLI 0.61 reads its settings files as JSON with comments: it
// passes the text through strip-json-comments (// and /* */ comments, no
// trailing commas) before JSON.parse (loadSettings in
// packages/cli/src/config/settings.ts), and writes them back keeping
// the comments (comment-json, updateSettingsFilePreservingFormat). This
// file reads the same form and finds where each value lies in the text,
// so that an edit changes the bytes of one array and nothing else.

// syntaxError is a place in the text that is not JSON with comments.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// lineOf is the 1-based line of the byte offset off in data.
func lineOf(data []byte, off int) int {
	return bytes.Count(data[:min(off, len(data))], []byte{'\n'}) + 1
}

// skipSpace skips white space and comments from i.
func skipSpace(data []byte, i int) (int, error) {
	for i < len(data) {
		switch c := data[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return i, &syntaxError{i, "a /* comment is not closed"}
			}
			i += 2 + end + 2
		default:
			return i, nil
		}
	}
	return i, nil
}

// span is where one value lies: data[start:end].
type span struct{ start, end int }

// member is one key of an object and where its value lies.
type member struct {
	key      string
	keyStart int
	val      span
}

// node is a value found in the text: an object's members or an array's
// elements, with the offsets of its brackets.
type node struct {
	span
	kind     byte // '{', '[', '"' or 0 for a number or literal
	members  []member
	elems    []span
	str      string // a string's value
	open     int    // offset of '{' or '['
	closeOff int    // offset of '}' or ']'
}

// parseValue reads the value at i (white space and comments skipped
// before it).
func parseValue(data []byte, i int) (node, error) {
	i, err := skipSpace(data, i)
	if err != nil {
		return node{}, err
	}
	if i >= len(data) {
		return node{}, &syntaxError{i, "the text ends where a value was expected"}
	}
	switch data[i] {
	case '{':
		return parseObject(data, i)
	case '[':
		return parseArray(data, i)
	case '"':
		end, err := skipString(data, i)
		if err != nil {
			return node{}, err
		}
		var s string
		if err := json.Unmarshal(data[i:end], &s); err != nil {
			return node{}, &syntaxError{i, "a string cannot be read"}
		}
		return node{span: span{i, end}, kind: '"', str: s}, nil
	}
	end := i
	for end < len(data) && bytes.IndexByte([]byte("+-.0123456789eEtrufalsn"), data[end]) >= 0 {
		end++
	}
	var v any
	if end == i || json.Unmarshal(data[i:end], &v) != nil {
		return node{}, &syntaxError{i, "a value cannot be read"}
	}
	return node{span: span{i, end}}, nil
}

func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		case '\n':
			return 0, &syntaxError{i, "a string is not closed on its line"}
		}
	}
	return 0, &syntaxError{i, "a string is not closed"}
}

func parseObject(data []byte, i int) (node, error) {
	n := node{kind: '{', open: i}
	j, err := skipSpace(data, i+1)
	if err != nil {
		return n, err
	}
	if j < len(data) && data[j] == '}' {
		n.closeOff, n.span = j, span{i, j + 1}
		return n, nil
	}
	for {
		if j >= len(data) || data[j] != '"' {
			return n, &syntaxError{j, "a key was expected (a trailing comma?)"}
		}
		key, err := parseValue(data, j)
		if err != nil {
			return n, err
		}
		j, err = skipSpace(data, key.end)
		if err != nil {
			return n, err
		}
		if j >= len(data) || data[j] != ':' {
			return n, &syntaxError{j, "a colon was expected after a key"}
		}
		val, err := parseValue(data, j+1)
		if err != nil {
			return n, err
		}
		n.members = append(n.members, member{key: key.str, keyStart: key.start, val: val.span})
		if j, err = skipSpace(data, val.end); err != nil {
			return n, err
		}
		if j < len(data) && data[j] == ',' {
			if j, err = skipSpace(data, j+1); err != nil {
				return n, err
			}
			continue
		}
		if j < len(data) && data[j] == '}' {
			n.closeOff, n.span = j, span{i, j + 1}
			return n, nil
		}
		return n, &syntaxError{j, "a comma or } was expected"}
	}
}

func parseArray(data []byte, i int) (node, error) {
	n := node{kind: '[', open: i}
	j, err := skipSpace(data, i+1)
	if err != nil {
		return n, err
	}
	if j < len(data) && data[j] == ']' {
		n.closeOff, n.span = j, span{i, j + 1}
		return n, nil
	}
	for {
		val, err := parseValue(data, j)
		if err != nil {
			return n, err
		}
		n.elems = append(n.elems, val.span)
		if j, err = skipSpace(data, val.end); err != nil {
			return n, err
		}
		if j < len(data) && data[j] == ',' {
			if j, err = skipSpace(data, j+1); err != nil {
				return n, err
			}
			if j < len(data) && data[j] == ']' {
				return n, &syntaxError{j, "a trailing comma before ]"}
			}
			continue
		}
		if j < len(data) && data[j] == ']' {
			n.closeOff, n.span = j, span{i, j + 1}
			return n, nil
		}
		return n, &syntaxError{j, "a comma or ] was expected"}
	}
}

// parseDocument reads a whole file: one object, then nothing but white
// space and comments.
func parseDocument(data []byte) (node, error) {
	root, err := parseValue(data, 0)
	if err != nil {
		return root, err
	}
	if root.kind != '{' {
		return root, &syntaxError{root.start, "the settings are not a JSON object"}
	}
	end, err := skipSpace(data, root.end)
	if err != nil {
		return root, err
	}
	if end != len(data) {
		return root, &syntaxError{end, "text follows the settings object"}
	}
	return root, nil
}

// stripComments is data with every comment turned into spaces (line
// ends kept), for encoding/json.
func stripComments(data []byte) []byte {
	out := append([]byte(nil), data...)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			end, err := skipString(out, i)
			if err != nil {
				return out
			}
			i = end - 1
		case out[i] == '/' && i+1 < len(out) && (out[i+1] == '/' || out[i+1] == '*'):
			j, _ := skipSpace(out, i)
			for k := i; k < j && k < len(out); k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			i = j - 1
		}
	}
	return out
}

// find is the member key of the object n, or nil: the last, when the
// key is given twice, as JSON.parse takes it (an edit of the first would
// change what Gemini CLI never reads).
func (n node) find(key string) *member {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return &n.members[i]
		}
	}
	return nil
}

// indentBefore is the white space from the start of the line of off to
// off, when nothing else precedes off on its line.
func indentBefore(data []byte, off int) (string, bool) {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	ind := data[start:off]
	if len(bytes.Trim(ind, " \t")) != 0 {
		return "", false
	}
	return string(ind), true
}

// splice replaces data[from:to] with s.
func splice(data []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(data)-(to-from)+len(s))
	out = append(out, data[:from]...)
	out = append(out, s...)
	return append(out, data[to:]...)
}

// addMember adds "key": value as the last member of the object obj,
// laid out as the members before it are.
func addMember(data []byte, obj node, key, value string) []byte {
	k, _ := json.Marshal(key)
	text := string(k) + ": " + value
	if len(obj.members) == 0 {
		ind, ok := indentBefore(data, obj.open)
		if !ok {
			ind = ""
		}
		return splice(data, obj.open+1, obj.closeOff, "\n"+ind+"  "+text+"\n"+ind)
	}
	last := obj.members[len(obj.members)-1]
	if ind, ok := indentBefore(data, last.keyStart); ok && last.keyStart > 0 {
		return splice(data, last.val.end, last.val.end, ",\n"+ind+text)
	}
	return splice(data, last.val.end, last.val.end, ", "+text)
}

// removeAt removes the i-th of the spans items (an object's members from
// their key, or an array's elements) with the comma that joins it to
// its neighbour.
func removeAt(data []byte, items []span, i int) []byte {
	switch {
	case len(items) == 1:
		return splice(data, items[0].start, items[0].end, "")
	case i < len(items)-1:
		return splice(data, items[i].start, items[i+1].start, "")
	default:
		return splice(data, items[i-1].end, items[i].end, "")
	}
}

func memberSpans(n node) []span {
	out := make([]span, len(n.members))
	for i, m := range n.members {
		out[i] = span{m.keyStart, m.val.end}
	}
	return out
}

// readable is err in words that name the file and the line.
func readable(path string, data []byte, err error) error {
	if se := (*syntaxError)(nil); errors.As(err, &se) {
		return fmt.Errorf("%s, line %d: %w", path, lineOf(data, se.off), err)
	}
	return fmt.Errorf("%s: %w", path, err)
}
