package hookout

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// encode is o as the JSON object gemkit writes on the hook's stdout, on
// one line: its fields in a fixed order, none Gemini CLI would not act
// on, and every character past ASCII escaped, so that Gemini CLI, which
// decodes a hook's stdout chunk by chunk (data.toString()), reads back
// exactly these strings however the pipe splits them.
func (o output) encode() []byte {
	var top object
	if o.stop {
		top.raw("continue", "false")
	}
	top.str("stopReason", o.stopReason)
	top.str("decision", o.decision)
	top.str("reason", o.reason)
	top.str("systemMessage", o.systemMessage)
	if o.suppress {
		top.raw("suppressOutput", "true")
	}
	var spec object
	spec.str("additionalContext", o.context)
	if o.clearContext {
		spec.raw("clearContext", "true")
	}
	if o.toolsNone {
		spec.raw("toolConfig", `{"mode":"NONE"}`)
	}
	if spec.b.Len() > 0 {
		top.raw("hookSpecificOutput", spec.String())
	}
	return []byte(top.String() + "\n")
}

// object writes a JSON object's members, one at a time.
type object struct{ b strings.Builder }

// raw adds the member key with the JSON text value.
func (j *object) raw(key, value string) {
	if j.b.Len() == 0 {
		j.b.WriteByte('{')
	} else {
		j.b.WriteByte(',')
	}
	writeString(&j.b, key)
	j.b.WriteByte(':')
	j.b.WriteString(value)
}

// str adds the member key with the string s, unless s is empty.
func (j *object) str(key, s string) {
	if s == "" {
		return
	}
	var v strings.Builder
	writeString(&v, s)
	j.raw(key, v.String())
}

// String is the object's JSON text.
func (j *object) String() string {
	if j.b.Len() == 0 {
		return "{}"
	}
	return j.b.String() + "}"
}

// writeString writes s as a JSON string of ASCII characters only: the
// escapes JSON names where it has them, \uXXXX (a surrogate pair past
// the Basic Multilingual Plane) for every other control character and
// every character past ASCII.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			hex4(b, hi)
			hex4(b, lo)
		default:
			hex4(b, r)
		}
	}
	b.WriteByte('"')
}

// hex4 writes r as \uXXXX.
func hex4(b *strings.Builder, r rune) {
	h := strconv.FormatInt(int64(r), 16)
	b.WriteString(`\u` + strings.Repeat("0", 4-len(h)) + h)
}
