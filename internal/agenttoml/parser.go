package agenttoml

import (
	"fmt"
	"unicode/utf8"
)

// The machine of @iarna/toml's lib/parser.js: one state function runs
// for each character (runOne); next changes the current state's function,
// goto changes it and runs it on the same character, call pushes a new
// state (and sets what the current one resumes with), return pops it and
// hands the popped state's value (its buffer when none) to the one below,
// returnNow runs that one on the same character. States here are numbers
// (stateID), so that finish can tell, as the library does by comparing
// functions, when the machine stops changing.

// end is the character past the end of the document (Parser.END).
const end rune = 0x110000

type stateID int

// state is one frame of the machine (class State).
type state struct {
	fn       stateID
	buf      []byte // the string the state builds, UTF-8
	returned any
	// result is a date's text so far; keys the keys of an assignment
	// (resultTable in parseAssign); table an inline table's object
	// (resultTable in parseInlineTable); arr an inline array's
	// (resultArr).
	result string
	keys   []string
	table  *Table
	arr    *list
}

// bufString is a state's buffer, as JavaScript would return it.
func (s *state) bufString() string { return string(s.buf) }

type parser struct {
	char      rune
	line, col int
	obj, ctx  *Table
	stack     []*state
	st        *state
}

// failure is a panic of the machine, recovered by Parse: the library
// throws.
type failure struct{ err error }

// kv is an assignment, key path and value (recordAssignValue).
type kv struct {
	keys  []string
	value any
}

// Parse reads data, the bytes of a file, as Gemini CLI 0.61 reads a
// policy file: decoded as Node's readFile(path, 'utf-8') does, parsed by
// @iarna/toml 2.2.5's toml.parse. A document the library rejects is a
// *SyntaxError; one whose reading gemkit cannot tell, an
// *UncertainError.
func Parse(data []byte) (doc *Table, err error) {
	src := decodeUTF8(data)
	p := &parser{char: -1}
	p.obj = newTable(false)
	p.ctx = p.obj
	p.st = &state{fn: sStart}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			doc, err = nil, f.err
		}
	}()
	for i, c := range src {
		if i > 0 && src[i-1] == '\n' {
			p.line++
			p.col = -1
		}
		p.char = c
		p.col++
		p.runOne()
	}
	p.finish()
	finalize(p.obj)
	return p.obj, nil
}

// finalize turns the arrays of t, and of the tables within, into
// []Value.
func finalize(t *Table) {
	for k, v := range t.vals {
		t.vals[k] = final(v)
	}
}

func final(v Value) Value {
	switch x := v.(type) {
	case *Table:
		finalize(x)
	case *list:
		out := make([]Value, len(x.items))
		for i, it := range x.items {
			out[i] = final(it)
		}
		return out
	}
	return v
}

// finish runs the machine on the end of the document until its state
// stops changing.
func (p *parser) finish() {
	p.char = end
	for {
		last := p.st.fn
		p.runOne()
		if p.st.fn == last {
			return
		}
	}
}

func (p *parser) runOne() { states[p.st.fn](p, p.st.returned) }

func (p *parser) next(fn stateID) { p.st.fn = fn }

func (p *parser) jump(fn stateID) {
	p.next(fn)
	p.runOne()
}

func (p *parser) call(fn stateID, returnWith stateID) {
	if returnWith != sNone {
		p.next(returnWith)
	}
	p.stack = append(p.stack, p.st)
	p.st = &state{fn: fn}
}

func (p *parser) callNow(fn, returnWith stateID) {
	p.call(fn, returnWith)
	p.runOne()
}

// ret pops the current state, handing value to the one below.
func (p *parser) ret(value any) {
	if len(p.stack) == 0 {
		p.fail("Stack underflow")
	}
	p.st = p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	p.st.returned = value
}

// retBuf pops the current state, handing its buffer to the one below
// (this.return() with no value).
func (p *parser) retBuf() { p.ret(p.st.bufString()) }

func (p *parser) retNow(value any) {
	p.ret(value)
	p.runOne()
}

func (p *parser) retBufNow() {
	p.retBuf()
	p.runOne()
}

func (p *parser) consume() {
	if p.char == end {
		p.fail("Unexpected end-of-buffer")
	}
	p.st.buf = utf8.AppendRune(p.st.buf, p.char)
}

func (p *parser) fail(format string, args ...any) {
	panic(failure{&SyntaxError{Line: p.line + 1, Col: p.col + 1, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) uncertain(format string, args ...any) {
	panic(failure{&UncertainError{Line: p.line + 1, Col: p.col + 1, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) atEndOfWord() bool {
	return p.char == '#' || p.char == '\t' || p.char == ' ' || p.atEndOfLine()
}

func (p *parser) atEndOfLine() bool { return p.char == end || p.char == '\n' || p.char == '\r' }

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

func isHexit(c rune) bool { return c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f' || isDigit(c) }

func isAlphaNumHyphen(c rune) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || isDigit(c) || c == '_' || c == '-'
}

func isAlphaNumQuoteHyphen(c rune) bool { return isAlphaNumHyphen(c) || c == '\'' || c == '"' }

// inherited are the properties every JavaScript object inherits
// (Object.prototype's, but __proto__, which the library's hasKey makes
// an own property before it is set): where the library takes
// obj[key] || Table() for a key the object lacks, such a key yields the
// inherited function instead of a new table, and what is set beneath it
// lands on that function, for every later parse of the process (a table
// [hasOwnProperty] with a key call breaks the library's own hasKey).
var inherited = map[string]bool{
	"constructor": true, "__defineGetter__": true, "__defineSetter__": true, "hasOwnProperty": true,
	"__lookupGetter__": true, "__lookupSetter__": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
	"toString": true, "valueOf": true, "toLocaleString": true,
}

// descend is target[kw] = target[kw] || Table() for a table on the way
// to a key (a dotted key's or a header's): an existing table not named
// by a header of its own, or a new one.
func (p *parser) descend(target *Table, kw string) *Table {
	if v, ok := target.vals[kw]; ok {
		t, isTable := v.(*Table)
		if !isTable || t.inline || t.declared {
			p.fail("Can't redefine existing key")
		}
		return t
	}
	if inherited[kw] {
		panic(failure{&UncertainError{Line: p.line + 1, Col: p.col + 1, Process: true,
			Msg: fmt.Sprintf("the key %q is a property every JavaScript object inherits: Gemini CLI's TOML library reaches that property instead of making a table, and what is set beneath it changes the library for every file it reads after this one", kw)}})
	}
	t := newTable(false)
	target.set(kw, t)
	return t
}

// assign sets the assignment a in target (recordAssignStatement,
// recordInlineTableValue).
func (p *parser) assign(target *Table, a kv) {
	keys := a.keys
	final := keys[len(keys)-1]
	for _, kw := range keys[:len(keys)-1] {
		target = p.descend(target, kw)
	}
	if target.has(final) {
		p.fail("Can't redefine existing key")
	}
	target.set(final, unbox(a.value))
}

// unbox turns the library's boxed numbers into what it stores.
func unbox(v any) any {
	switch x := v.(type) {
	case integerBox:
		return x.v
	case floatBox:
		return float64(x)
	}
	return v
}
