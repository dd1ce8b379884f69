// Package agentread reads the files an agent reads to decide what it
// will run (an extension's manifest, hooks/hooks.json, agents' front
// matter, its settings) exactly as that agent reads them: JSON as
// JavaScript's JSON.parse does after Node decodes the file as UTF-8,
// YAML as js-yaml's load does. gemkit decides what to switch into its
// sandbox from its own reading of those files; wherever that reading
// differed from the agent's (a key in other letters, a member given
// twice, a value of another type, a file past a limit), what gemkit did
// not see ran with the person's rights while gemkit said it was switched.
//
// What this package cannot read as the agent will, it refuses with an
// error that says so ([Unreadable]): the caller then holds the whole
// extension rather than guess. FuzzJSONMatchesNode and
// FuzzYAMLMatchesJSYAML hold the readings against the real JSON.parse
// and js-yaml of the interop packages.
package agentread

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Kind is the type of a Value, as JavaScript's typeof would tell it,
// with null and arrays told apart from objects.
type Kind uint8

// The kinds of values JSON.parse gives.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
	// Undefined is what js-yaml's load gives for a text with no
	// document: JavaScript's undefined, neither null nor an object.
	Undefined
)

func (k Kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object", "undefined"}[k]
}

// Value is one JSON value as JavaScript holds it after JSON.parse: an
// object keeps its own properties in JavaScript's order (array-index
// keys first, ascending, then the others as first written), a member
// given twice holds the last value at the first's place, and a number is
// a float64 (1e400 is +Inf, -0 stays -0).
type Value struct {
	kind Kind
	b    bool
	n    float64
	// text is a number's text as written in JSON, which JSON writes
	// again ("2.50" stays so); "" when it came from elsewhere.
	text string
	s    string
	arr  []Value
	obj  *object
}

// object is an object's own properties in JavaScript's order.
type object struct {
	keys []string
	vals map[string]Value
}

// Kind is v's kind.
func (v Value) Kind() Kind { return v.kind }

// Bool is v's value when it is a boolean.
func (v Value) Bool() (bool, bool) { return v.b, v.kind == Bool }

// Num is v's value when it is a number.
func (v Value) Num() (float64, bool) { return v.n, v.kind == Number }

// Str is v's value when it is a string.
func (v Value) Str() (string, bool) { return v.s, v.kind == String }

// Elems are v's elements when it is an array.
func (v Value) Elems() ([]Value, bool) { return v.arr, v.kind == Array }

// Keys are v's own keys in JavaScript's order when it is an object
// (Object.keys, Object.entries and for...in over own keys all use it).
func (v Value) Keys() []string {
	if v.kind != Object {
		return nil
	}
	return v.obj.keys
}

// Get is v's own property key, exactly as written: JavaScript's
// obj[key] for a key that no object inherits (see [Value.Lookup]).
func (v Value) Get(key string) (Value, bool) {
	if v.kind != Object {
		return Value{}, false
	}
	m, ok := v.obj.vals[key]
	return m, ok
}

// IsObject says whether typeof v is "object" and v is neither null nor
// an array: the test agents make before reading members.
func (v Value) IsObject() bool { return v.kind == Object }

// Truthy is JavaScript's truthiness: false, 0, -0, NaN, "" and null are
// false; every object and array is true.
func (v Value) Truthy() bool {
	switch v.kind {
	case Null, Undefined:
		return false
	case Bool:
		return v.b
	case Number:
		return v.n != 0 && !math.IsNaN(v.n)
	case String:
		return v.s != ""
	}
	return true
}

// TypeOf is JavaScript's typeof.
func (v Value) TypeOf() string {
	switch v.kind {
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Undefined:
		return "undefined"
	}
	return "object"
}

// Describe says what v is, for messages: its kind, and its value when
// it is short.
func (v Value) Describe() string {
	switch v.kind {
	case Null:
		return "null"
	case Undefined:
		return "nothing"
	case Bool:
		return fmt.Sprintf("the boolean %v", v.b)
	case Number:
		return "the number " + NumberString(v.n)
	case String:
		if len(v.s) <= 40 {
			return "the string " + strconv.Quote(v.s)
		}
		return "a string"
	case Array:
		return "an array"
	}
	return "an object"
}

// NumberString is JavaScript's String(n) for a number: integers up to
// 1e21 without exponent, shortest round trip otherwise.
func NumberString(n float64) string {
	switch {
	case math.IsNaN(n):
		return "NaN"
	case math.IsInf(n, 1):
		return "Infinity"
	case math.IsInf(n, -1):
		return "-Infinity"
	case n == 0:
		return "0"
	}
	abs := math.Abs(n)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	s := strconv.FormatFloat(n, 'e', -1, 64)
	// Go writes 1e+21 and 1e-07; JavaScript 1e+21 and 1e-7.
	mant, exp, _ := cutByte(s, 'e')
	sign := exp[0]
	digits := exp[1:]
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	return mant + "e" + string(sign) + digits
}

func cutByte(s string, c byte) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// isArrayIndex says whether key is a canonical array index, which
// JavaScript orders before other keys: "0" to "4294967294" written
// without leading zeros.
func isArrayIndex(key string) bool {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(key, 10, 64)
	return err == nil && n < math.MaxUint32
}

// set defines key as JSON.parse's CreateDataProperty does: a new key
// takes its place in JavaScript's order, a key given again keeps its
// place and takes the new value.
func (o *object) set(key string, v Value) {
	if _, ok := o.vals[key]; ok {
		o.vals[key] = v
		return
	}
	o.vals[key] = v
	if !isArrayIndex(key) {
		o.keys = append(o.keys, key)
		return
	}
	n, _ := strconv.ParseUint(key, 10, 64)
	i := 0
	for i < len(o.keys) && isArrayIndex(o.keys[i]) {
		m, _ := strconv.ParseUint(o.keys[i], 10, 64)
		if m > n {
			break
		}
		i++
	}
	o.keys = slices.Insert(o.keys, i, key)
}

// Interface is v as encoding/json would decode it into an any: nil,
// bool, float64, string, []any, map[string]any (the order of an
// object's keys is lost). Undefined is nil.
func (v Value) Interface() any {
	switch v.kind {
	case Bool:
		return v.b
	case Number:
		return v.n
	case String:
		return v.s
	case Array:
		out := make([]any, len(v.arr))
		for i, e := range v.arr {
			out[i] = e.Interface()
		}
		return out
	case Object:
		out := make(map[string]any, len(v.obj.keys))
		for _, k := range v.obj.keys {
			out[k] = v.obj.vals[k].Interface()
		}
		return out
	}
	return nil
}
