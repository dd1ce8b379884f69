package agentread

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Unmarshal reads text with [ParseJSON] and stores it in v as
// encoding/json would, but for what encoding/json reads apart from
// JSON.parse: a struct's field takes only the key that is its name
// exactly (encoding/json takes "Command" for command too, and the last
// of the two), a member given twice is read once, with its last value,
// and a json.RawMessage gets the value written again from that reading
// ([Value.JSON]), so that a later Unmarshal of it reads the same. Keys
// Gemini CLI's loader drops from an extension's files (__proto__,
// constructor, prototype) are dropped when dropIgnored is set. A value
// of the wrong type is a *json.UnmarshalTypeError naming its path, as
// encoding/json's, after the rest is stored.
func Unmarshal(text []byte, v any, dropIgnored bool) error {
	val, err := ParseJSON(text)
	if err != nil {
		return err
	}
	return Decode(val, v, dropIgnored)
}

// Decode stores val in v as [Unmarshal] does.
func Decode(val Value, v any, dropIgnored bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("agentread: Decode needs a non-nil pointer, not %T", v)
	}
	d := &decoder{dropIgnored: dropIgnored}
	d.value(val, rv.Elem(), "")
	return d.err
}

type decoder struct {
	dropIgnored bool
	err         error
}

var rawType = reflect.TypeFor[json.RawMessage]()

// mismatch records the first value of the wrong type, as encoding/json
// reports it, and leaves the field as it was.
func (d *decoder) mismatch(val Value, t reflect.Type, path string) {
	if d.err == nil {
		d.err = &json.UnmarshalTypeError{Value: val.kind.String(), Type: t, Field: path}
	}
}

func (d *decoder) value(val Value, rv reflect.Value, path string) {
	if rv.Type() == rawType {
		rv.SetBytes(val.JSON(d.dropIgnored))
		return
	}
	if val.kind == Null || val.kind == Undefined {
		// As encoding/json: null leaves a value as it is, and empties
		// a pointer, a map, a slice and an interface.
		switch rv.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			rv.SetZero()
		}
		return
	}
	if rv.Kind() != reflect.Pointer && rv.CanAddr() {
		// A type that reads itself reads the value written again, or
		// its string, as encoding/json has it do.
		switch u := rv.Addr().Interface().(type) {
		case json.Unmarshaler:
			if err := u.UnmarshalJSON(val.JSON(d.dropIgnored)); err != nil && d.err == nil {
				d.err = err
			}
			return
		case encoding.TextUnmarshaler:
			if val.kind != String {
				d.mismatch(val, rv.Type(), path)
				return
			}
			if err := u.UnmarshalText([]byte(val.s)); err != nil && d.err == nil {
				d.err = err
			}
			return
		}
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		d.value(val, rv.Elem(), path)
	case reflect.Interface:
		if rv.NumMethod() != 0 {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.Set(reflect.ValueOf(val.dropped(d.dropIgnored).Interface()))
	case reflect.Struct:
		d.object(val, rv, path)
	case reflect.Map:
		d.mapOf(val, rv, path)
	case reflect.Slice, reflect.Array:
		d.list(val, rv, path)
	default:
		d.scalar(val, rv, path)
	}
}

func (d *decoder) object(val Value, rv reflect.Value, path string) {
	if val.kind != Object {
		d.mismatch(val, rv.Type(), path)
		return
	}
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := fieldName(f)
		if !ok {
			continue
		}
		if d.dropIgnored && DroppedKey(name) {
			continue
		}
		m, found := val.Get(name)
		if !found {
			continue
		}
		d.value(m, rv.Field(i), joinPath(path, name))
	}
}

// fieldName is the key a field takes, exactly: its json tag's name, else
// its own; ok is false for a field encoding/json leaves alone.
func fieldName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

func (d *decoder) mapOf(val Value, rv reflect.Value, path string) {
	t := rv.Type()
	if val.kind != Object || t.Key().Kind() != reflect.String {
		d.mismatch(val, t, path)
		return
	}
	if rv.IsNil() {
		rv.Set(reflect.MakeMap(t))
	}
	for _, k := range val.Keys() {
		if d.dropIgnored && DroppedKey(k) {
			continue
		}
		m, _ := val.Get(k)
		e := reflect.New(t.Elem()).Elem()
		d.value(m, e, joinPath(path, k))
		rv.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
	}
}

func (d *decoder) list(val Value, rv reflect.Value, path string) {
	if val.kind != Array {
		d.mismatch(val, rv.Type(), path)
		return
	}
	// An element's path is its list's, as encoding/json gives it.
	if rv.Kind() == reflect.Array {
		for i := range min(rv.Len(), len(val.arr)) {
			d.value(val.arr[i], rv.Index(i), path)
		}
		return
	}
	s := reflect.MakeSlice(rv.Type(), len(val.arr), len(val.arr))
	for i, e := range val.arr {
		d.value(e, s.Index(i), path)
	}
	rv.Set(s)
}

func (d *decoder) scalar(val Value, rv reflect.Value, path string) {
	switch rv.Kind() {
	case reflect.String:
		if val.kind != String {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.SetString(val.s)
	case reflect.Bool:
		if val.kind != Bool {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.SetBool(val.b)
	case reflect.Float32, reflect.Float64:
		if val.kind != Number || math.IsInf(val.n, 0) {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.SetFloat(val.n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if val.kind != Number || val.n != math.Trunc(val.n) || rv.OverflowInt(int64(val.n)) || math.Abs(val.n) > 1<<53 {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.SetInt(int64(val.n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if val.kind != Number || val.n != math.Trunc(val.n) || val.n < 0 || rv.OverflowUint(uint64(val.n)) || val.n > 1<<53 {
			d.mismatch(val, rv.Type(), path)
			return
		}
		rv.SetUint(uint64(val.n))
	default:
		d.mismatch(val, rv.Type(), path)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// dropped is v without the keys Gemini CLI's loader drops, when drop is
// set.
func (v Value) dropped(drop bool) Value {
	if !drop {
		return v
	}
	switch v.kind {
	case Array:
		out := make([]Value, len(v.arr))
		for i, e := range v.arr {
			out[i] = e.dropped(true)
		}
		return Value{kind: Array, arr: out}
	case Object:
		o := &object{vals: map[string]Value{}}
		for _, k := range v.obj.keys {
			if !DroppedKey(k) {
				o.set(k, v.obj.vals[k].dropped(true))
			}
		}
		return Value{kind: Object, obj: o}
	}
	return v
}

// DroppedKey is a key Gemini CLI's loader of an extension's files drops
// at every level (recursivelyHydrateStrings' UNMARSHALL_KEY_IGNORE_LIST
// in packages/cli/src/config/extensions/variables.ts).
func DroppedKey(k string) bool { return k == "__proto__" || k == "constructor" || k == "prototype" }

// JSON is v written as JSON again: keys in JavaScript's order, each
// once; without the keys Gemini CLI's loader drops, when dropIgnored is
// set; numbers as they were written (one from YAML past float64's range
// as 1e999, which JSON.parse reads as Infinity again).
func (v Value) JSON(dropIgnored bool) []byte {
	var b bytes.Buffer
	v.dropped(dropIgnored).writeJSON(&b)
	return b.Bytes()
}

func (v Value) writeJSON(b *bytes.Buffer) {
	switch v.kind {
	case Null, Undefined:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.b))
	case Number:
		switch {
		case v.text != "":
			b.WriteString(v.text)
		case math.IsInf(v.n, 1):
			b.WriteString("1e999")
		case math.IsInf(v.n, -1):
			b.WriteString("-1e999")
		default:
			b.WriteString(strconv.FormatFloat(v.n, 'g', -1, 64))
		}
	case String:
		writeJSONString(b, v.s)
	case Array:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.writeJSON(b)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, k := range v.obj.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			v.obj.vals[k].writeJSON(b)
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
