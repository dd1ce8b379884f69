package extension

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// This file decodes a manifest of the usual shape in one pass over its
// bytes, without reflection. encoding/json takes about 370,000
// instructions for the 2 KB manifest of the "tools" template (it scans
// the document twice, once to check it and once to decode it, calling a
// state function per byte, and reaches each field through reflection),
// which was most of the time `gemkit extensions list` spent with 200
// extensions installed; this reader takes a tenth of that. It is written
// by hand because the standard library has no faster decoder (its
// encoding/json/v2 is still an experiment) and the manifest's types are
// few and fixed.
//
// It takes only what it can decode exactly as encoding/json does and
// gives up on anything else: a member of the wrong type, a member given
// twice (encoding/json then merges the two), a key that matches a field
// only when case is ignored, a string it cannot read plainly, and any
// JSON that is not valid. parseFast then decodes the manifest with
// encoding/json, and FuzzDecodeManifestMatchesDecoder checks that both
// give the same Manifest whenever this one does not give up.
// TestManifestDecoderKnowsEveryField fails when a field is added to the
// manifest's types and not here.

// decodeManifest decodes data into the fields parseFast reads, and finds
// the keys nothing reads as unknownKeys does; ok is false when it gives
// up.
func decodeManifest(data []byte) (w manifestWire, extra map[string]json.RawMessage, unknown []Problem, ok bool) {
	r := &manifestReader{data: data}
	var seen fieldSet
	r.object(func(key []byte) {
		i := indexOf(topLevelKeys, key)
		if i < 0 {
			r.unknown(key, topLevelKeys)
			r.keys.top(string(key))
			raw := r.raw()
			if !r.bad {
				if extra == nil {
					extra = map[string]json.RawMessage{}
				}
				extra[string(key)] = raw
			}
			return
		}
		if !seen.add(i) {
			r.bad = true
			return
		}
		switch topLevelKeys[i] {
		case "name":
			r.str(&w.Name)
		case "version":
			r.str(&w.Version)
		case "description":
			r.str(&w.Description)
		case "permissions":
			w.Permissions = r.permissions()
		case "mcpServers":
			w.MCPServers = r.rawMap()
		case "contextFileName":
			w.ContextFileName = r.raw()
		case "excludeTools":
			w.ExcludeTools = list(r, func(s *string) { r.str(s) })
		case "settings":
			w.Settings = list(r, r.setting)
		case "themes":
			w.Themes = list(r, func(raw *json.RawMessage) { *raw = r.raw() })
		case "migratedTo":
			r.str(&w.MigratedTo)
		case "plan":
			w.Plan = r.raw()
		case "tools":
			n := 0
			w.Tools = list(r, func(t *Tool) { r.tool(t, n); n++ })
		case "docs":
			w.Docs = list(r, r.doc)
		case "examples":
			w.Examples = list(r, r.example)
		default:
			// A field of the manifest this reader does not know.
			r.bad = true
		}
	})
	r.space()
	if r.bad || r.i != len(r.data) {
		return manifestWire{}, nil, nil, false
	}
	r.keys.servers(w.MCPServers)
	return w, extra, r.keys, true
}

// The keys of each object of the manifest, as encoding/json matches them
// to the fields of manifestWire and the types below it (with toolKeys
// and argKeys).
var (
	topLevelKeys   = []string{"name", "version", "description", "permissions", "mcpServers", "contextFileName", "excludeTools", "settings", "themes", "migratedTo", "plan", "tools", "docs", "examples"}
	permissionKeys = []string{"filesystem", "network"}
	filesystemKeys = []string{"read", "write", "protectedWrites"}
	networkKeys    = []string{"allowedHosts"}
	settingKeys    = []string{"name", "description", "envVar", "sensitive"}
	docKeys        = []string{"name", "description", "file"}
	exampleKeys    = []string{"prompt", "tool_call"}
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

func (r *manifestReader) permissions() *Permissions {
	if r.null() {
		return nil
	}
	p := &Permissions{}
	r.fields(permissionKeys, func(i int) {
		switch permissionKeys[i] {
		case "filesystem":
			if r.null() {
				p.Filesystem = nil
				return
			}
			f := &FilesystemPermissions{}
			r.fields(filesystemKeys, func(i int) {
				switch filesystemKeys[i] {
				case "read":
					r.str((*string)(&f.Read))
				case "write":
					r.str((*string)(&f.Write))
				case "protectedWrites":
					f.ProtectedWrites = list(r, func(s *string) { r.str(s) })
				}
			}, nil)
			p.Filesystem = f
		case "network":
			if r.null() {
				p.Network = nil
				return
			}
			n := &NetworkPermissions{}
			r.fields(networkKeys, func(int) {
				n.AllowedHosts = list(r, func(s *string) { r.str(s) })
			}, nil)
			p.Network = n
		}
	}, nil)
	return p
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

func (r *manifestReader) setting(s *Setting) {
	r.fields(settingKeys, func(i int) {
		switch settingKeys[i] {
		case "name":
			r.str(&s.Name)
		case "description":
			r.str(&s.Description)
		case "envVar":
			r.str(&s.EnvVar)
		case "sensitive":
			if v, ok := r.boolean(); ok {
				s.Sensitive = v
			}
		}
	}, nil)
}

// tool reads tools[n].
func (r *manifestReader) tool(t *Tool, n int) {
	r.fields(toolKeys, func(i int) {
		switch toolKeys[i] {
		case "name":
			r.str(&t.Name)
		case "description":
			r.str(&t.Description)
		case "executable":
			r.str(&t.Executable)
		case "runtime":
			r.str((*string)(&t.Runtime))
		case "output":
			r.str((*string)(&t.Output))
		case "outputSchema":
			t.OutputSchema = r.raw()
		case "args":
			j := 0
			t.Args = list(r, func(a *Arg) { r.arg(a, n, j); j++ })
		}
	}, func(key string) { r.keys.tool(n, key) })
}

// arg reads tools[n].args[j].
func (r *manifestReader) arg(a *Arg, n, j int) {
	r.fields(argKeys, func(i int) {
		switch argKeys[i] {
		case "name":
			r.str(&a.Name)
		case "type":
			r.str((*string)(&a.Type))
		case "description":
			r.str(&a.Description)
		case "required":
			if v, ok := r.boolean(); ok {
				a.Required = &v
			} else {
				a.Required = nil
			}
		case "default":
			a.Default = r.raw()
		}
	}, func(key string) { r.keys.arg(n, j, key) })
}

func (r *manifestReader) doc(d *Doc) {
	r.fields(docKeys, func(i int) {
		switch docKeys[i] {
		case "name":
			r.str(&d.Name)
		case "description":
			r.str(&d.Description)
		case "file":
			r.str(&d.File)
		}
	}, nil)
}

func (r *manifestReader) example(e *Example) {
	r.fields(exampleKeys, func(i int) {
		switch exampleKeys[i] {
		case "prompt":
			r.str(&e.Prompt)
		case "tool_call":
			r.str(&e.ToolCall)
		}
	}, nil)
}
