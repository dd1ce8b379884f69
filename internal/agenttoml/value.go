// Package agenttoml reads TOML exactly as Gemini CLI 0.61 reads it:
// with @iarna/toml 2.2.5 (toml.parse, which packages/core/src/policy/
// toml-loader.ts calls on every policies/*.toml file), quirks and all,
// after Node's UTF-8 decoding of the file (fs.readFile(path, 'utf-8')).
//
// The parser is that library's state machine, state for state, so that
// what it accepts, rejects and builds is the agent's: TOML 0.5 with its
// single-type arrays, "Can't redefine existing key" for a duplicate (no
// last-wins), integers as JavaScript numbers (those past 2^53 as a 64-bit
// BigInt, wrapped), dates as JavaScript Dates, a byte-order mark as an
// unknown character. Where the agent's result depends on more than the
// library (a date's validity is V8's Date parser; a table named like an
// inherited property of a JavaScript object reaches that property, and
// can break every later parse of the process), Parse says it cannot tell
// with an *UncertainError rather than guess: its caller fails closed.
package agenttoml

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A Value is what a TOML value becomes in JavaScript: string, bool,
// float64 (a JavaScript number: TOML integers and floats alike, inf and
// nan among them), BigInt, Datetime, []Value or *Table.
type Value = any

// BigInt is an integer past JavaScript's safe range (2^53-1), which
// @iarna/toml keeps as a BigInt wrapped to 64 bits (BigInt.asIntN(64)):
// typeof "bigint", not a number.
type BigInt int64

// Datetime is a JavaScript Date @iarna/toml made (a date, a time, a
// local date-time or an offset date-time).
type Datetime struct {
	// Kind is "date", "time", "local" or "offset".
	Kind string
	// Text is the value as written.
	Text string
}

// Table is a TOML table as the JavaScript object @iarna/toml builds:
// its keys in the order they were set.
type Table struct {
	keys []string
	vals map[string]Value
	// inline: an inline table ({...}), which no header may extend;
	// declared: named by a [header] of its own.
	inline, declared bool
}

func newTable(inline bool) *Table { return &Table{vals: map[string]Value{}, inline: inline} }

// Keys are the table's keys in the order they were set.
func (t *Table) Keys() []string { return t.keys }

// Get is the value of key, and whether the table has it.
func (t *Table) Get(key string) (Value, bool) {
	v, ok := t.vals[key]
	return v, ok
}

// Len is the number of keys.
func (t *Table) Len() int { return len(t.keys) }

func (t *Table) has(key string) bool {
	_, ok := t.vals[key]
	return ok
}

func (t *Table) set(key string, v Value) {
	if !t.has(key) {
		t.keys = append(t.keys, key)
	}
	t.vals[key] = v
}

// list is an array while it is parsed: an array of tables ([[x]]) or
// an inline array, whose items must share one type (contentType).
type list struct {
	items       []Value
	inline      bool
	contentType string
}

// The boxed numbers of @iarna/toml, before they are stored: their type
// decides whether an inline array mixes types (tomlType).
type (
	integerBox struct{ v Value } // float64 or BigInt
	floatBox   float64
)

// SyntaxError is a document @iarna/toml rejects: Gemini CLI then skips
// the whole file ("TOML parsing failed").
type SyntaxError struct {
	Line, Col int // 1-based
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at row %d, col %d", e.Msg, e.Line, e.Col)
}

// UncertainError is a document whose reading by Gemini CLI gemkit cannot
// tell for sure.
type UncertainError struct {
	Line, Col int
	Msg       string
	// Process: parsing it can change the library for every later parse
	// of the process (a key set beneath an inherited property).
	Process bool
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("%s at row %d, col %d", e.Msg, e.Line, e.Col)
}

// Plain turns v into plain Go values for comparison and printing:
// tables become map[string]any, arrays []any, numbers float64 (a BigInt
// stays BigInt).
func Plain(v Value) any {
	switch x := v.(type) {
	case *Table:
		m := make(map[string]any, len(x.keys))
		for _, k := range x.keys {
			m[k] = Plain(x.vals[k])
		}
		return m
	case []Value:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = Plain(it)
		}
		return out
	}
	return v
}

// NumberText is a JavaScript number as String(n) writes it (Number::
// toString: the shortest digits that read back as n, in fixed notation
// from 1e-7 up to 1e21, else exponential), for the values a person reads.
func NumberText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	case f < 0:
		return "-" + NumberText(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	exponent := "e" + sign + strconv.Itoa(abs(n-1))
	if k == 1 {
		return digits + exponent
	}
	return digits[:1] + "." + digits[1:] + exponent
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
