package agenttoml

import (
	"strconv"
	"unicode/utf8"
)

// The strings: basic and literal, on one line or several, and their
// escapes.

func init() {
	register(map[stateID]func(*parser, any){
		sSingleString: (*parser).parseSingleString, sLiteralString: (*parser).parseLiteralString,
		sLiteralMultiStringMaybe: (*parser).parseLiteralMultiStringMaybe, sLiteralMultiString: (*parser).parseLiteralMultiString,
		sLiteralMultiStringContent: (*parser).parseLiteralMultiStringContent, sLiteralMultiEnd: (*parser).parseLiteralMultiEnd,
		sLiteralMultiEnd2: (*parser).parseLiteralMultiEnd2, sDoubleString: (*parser).parseDoubleString,
		sBasicString: (*parser).parseBasicString, sRecordEscapeReplacement: (*parser).recordEscapeReplacement,
		sMultiStringMaybe: (*parser).parseMultiStringMaybe, sMultiString: (*parser).parseMultiString,
		sMultiStringContent: (*parser).parseMultiStringContent, sRecordMultiEscapeReplacement: (*parser).recordMultiEscapeReplacement,
		sMultiEnd: (*parser).parseMultiEnd, sMultiEnd2: (*parser).parseMultiEnd2, sMultiEscape: (*parser).parseMultiEscape,
		sPreMultiTrim: (*parser).parsePreMultiTrim, sMultiTrim: (*parser).parseMultiTrim, sEscape: (*parser).parseEscape,
		sUnicodeReturn: (*parser).parseUnicodeReturn, sSmallUnicode: (*parser).parseSmallUnicode,
		sLargeUnicode: (*parser).parseLargeUnicode,
	})
}

// isControl is a character no string may hold as it is; also lets the
// characters a multi-line string may hold pass.
func isControl(c rune, also ...rune) bool {
	if c == 0x7F {
		return true
	}
	if c > 0x1F || c == '\t' {
		return false
	}
	for _, a := range also {
		if c == a {
			return false
		}
	}
	return true
}

func (p *parser) failControl() {
	code := "\\u00"
	if p.char < 16 {
		code += "0"
	}
	p.fail("Control characters (codes < 0x1f and 0x7f) are not allowed in strings, use %s%s instead", code, strconv.FormatInt(int64(p.char), 16))
}

func (p *parser) parseSingleString(any) {
	if p.char == '\'' {
		p.next(sLiteralMultiStringMaybe)
	} else {
		p.jump(sLiteralString)
	}
}

func (p *parser) parseLiteralString(any) {
	switch {
	case p.char == '\'':
		p.retBuf()
	case p.atEndOfLine():
		p.fail("Unterminated string")
	case isControl(p.char):
		p.failControl()
	default:
		p.consume()
	}
}

func (p *parser) parseLiteralMultiStringMaybe(any) {
	if p.char == '\'' {
		p.next(sLiteralMultiString)
	} else {
		p.retBufNow()
	}
}

func (p *parser) parseLiteralMultiString(any) {
	switch p.char {
	case '\r':
	case '\n':
		p.next(sLiteralMultiStringContent)
	default:
		p.jump(sLiteralMultiStringContent)
	}
}

func (p *parser) parseLiteralMultiStringContent(any) {
	switch {
	case p.char == '\'':
		p.next(sLiteralMultiEnd)
	case p.char == end:
		p.fail("Unterminated multi-line string")
	case isControl(p.char, '\n', '\r'):
		p.failControl()
	default:
		p.consume()
	}
}

func (p *parser) parseLiteralMultiEnd(any) {
	if p.char == '\'' {
		p.next(sLiteralMultiEnd2)
		return
	}
	p.st.buf = append(p.st.buf, '\'')
	p.jump(sLiteralMultiStringContent)
}

func (p *parser) parseLiteralMultiEnd2(any) {
	if p.char == '\'' {
		p.retBuf()
		return
	}
	p.st.buf = append(p.st.buf, "''"...)
	p.jump(sLiteralMultiStringContent)
}

func (p *parser) parseDoubleString(any) {
	if p.char == '"' {
		p.next(sMultiStringMaybe)
	} else {
		p.jump(sBasicString)
	}
}

func (p *parser) parseBasicString(any) {
	switch {
	case p.char == '\\':
		p.call(sEscape, sRecordEscapeReplacement)
	case p.char == '"':
		p.retBuf()
	case p.atEndOfLine():
		p.fail("Unterminated string")
	case isControl(p.char):
		p.failControl()
	default:
		p.consume()
	}
}

func (p *parser) recordEscapeReplacement(ret any) {
	p.st.buf = append(p.st.buf, ret.(string)...)
	p.jump(sBasicString)
}

func (p *parser) parseMultiStringMaybe(any) {
	if p.char == '"' {
		p.next(sMultiString)
	} else {
		p.retBufNow()
	}
}

func (p *parser) parseMultiString(any) {
	switch p.char {
	case '\r':
	case '\n':
		p.next(sMultiStringContent)
	default:
		p.jump(sMultiStringContent)
	}
}

func (p *parser) parseMultiStringContent(any) {
	switch {
	case p.char == '\\':
		p.call(sMultiEscape, sRecordMultiEscapeReplacement)
	case p.char == '"':
		p.next(sMultiEnd)
	case p.char == end:
		p.fail("Unterminated multi-line string")
	case isControl(p.char, '\n', '\r'):
		p.failControl()
	default:
		p.consume()
	}
}

func (p *parser) recordMultiEscapeReplacement(ret any) {
	p.st.buf = append(p.st.buf, ret.(string)...)
	p.jump(sMultiStringContent)
}

func (p *parser) parseMultiEnd(any) {
	if p.char == '"' {
		p.next(sMultiEnd2)
		return
	}
	p.st.buf = append(p.st.buf, '"')
	p.jump(sMultiStringContent)
}

func (p *parser) parseMultiEnd2(any) {
	if p.char == '"' {
		p.retBuf()
		return
	}
	p.st.buf = append(p.st.buf, `""`...)
	p.jump(sMultiStringContent)
}

func (p *parser) parseMultiEscape(any) {
	switch p.char {
	case '\r', '\n':
		p.next(sMultiTrim)
	case ' ', '\t':
		p.next(sPreMultiTrim)
	default:
		p.jump(sEscape)
	}
}

func (p *parser) parsePreMultiTrim(any) {
	switch p.char {
	case ' ', '\t':
	case '\r', '\n':
		p.next(sMultiTrim)
	default:
		p.fail("Can't escape whitespace")
	}
}

func (p *parser) parseMultiTrim(any) {
	switch p.char {
	case '\n', ' ', '\t', '\r':
	default:
		p.retBufNow()
	}
}

var escapes = map[rune]string{'b': "\b", 't': "\t", 'n': "\n", 'f': "\f", 'r': "\r", '"': `"`, '\\': `\`}

func (p *parser) parseEscape(any) {
	if s, ok := escapes[p.char]; ok {
		p.ret(s)
		return
	}
	switch p.char {
	case 'u':
		p.call(sSmallUnicode, sUnicodeReturn)
	case 'U':
		p.call(sLargeUnicode, sUnicodeReturn)
	default:
		p.fail("Unknown escape character: %d", p.char)
	}
}

func (p *parser) parseUnicodeReturn(ret any) {
	cp, _ := strconv.ParseUint(ret.(string), 16, 32)
	switch {
	case cp >= 0xD800 && cp <= 0xDFFF:
		p.fail("Invalid unicode, character in range 0xD800 - 0xDFFF is reserved")
	case cp > utf8.MaxRune:
		p.fail("Invalid code point %d", cp)
	}
	p.retNow(string(rune(cp)))
}

func (p *parser) parseSmallUnicode(any) { p.hexDigits(4) }

func (p *parser) parseLargeUnicode(any) { p.hexDigits(8) }

func (p *parser) hexDigits(n int) {
	if !isHexit(p.char) {
		p.fail("Invalid character in unicode sequence, expected hex")
	}
	p.consume()
	if len(p.st.buf) >= n {
		p.retBuf()
	}
}
