package agenttoml

import (
	"errors"
	"math"
	"math/big"
	"strconv"
)

// The numbers: integers (decimal, hex, octal, binary), floats, inf and
// nan, and the booleans.

func init() {
	register(map[stateID]func(*parser, any){
		sInf: (*parser).parseInf, sInf2: (*parser).parseInf2, sNan: (*parser).parseNan, sNan2: (*parser).parseNan2,
		sNumberSign: (*parser).parseNumberSign, sMaybeSignedInfOrNan: (*parser).parseMaybeSignedInfOrNan,
		sNumberIntegerStart: (*parser).parseNumberIntegerStart, sNumberIntegerExponentOrDecimal: (*parser).parseNumberIntegerExponentOrDecimal,
		sNumberInteger: (*parser).parseNumberInteger, sNoUnder: (*parser).parseNoUnder,
		sNoUnderHexOctBinLiteral: (*parser).parseNoUnderHexOctBinLiteral, sNumberFloat: (*parser).parseNumberFloat,
		sNumberExponentSign: (*parser).parseNumberExponentSign, sNumberExponent: (*parser).parseNumberExponent,
		sNumberOrDateTime: (*parser).parseNumberOrDateTime, sNumberOrDateTimeOnly: (*parser).parseNumberOrDateTimeOnly,
		sDateTimeOnly: (*parser).parseDateTimeOnly, sNumberBaseOrDateTime: (*parser).parseNumberBaseOrDateTime,
		sIntegerHex: (*parser).parseIntegerHex, sIntegerOct: (*parser).parseIntegerOct, sIntegerBin: (*parser).parseIntegerBin,
		sBoolean: (*parser).parseBoolean, sTrueR: (*parser).parseTrueR, sTrueU: (*parser).parseTrueU, sTrueE: (*parser).parseTrueE,
		sFalseA: (*parser).parseFalseA, sFalseL: (*parser).parseFalseL, sFalseS: (*parser).parseFalseS, sFalseE: (*parser).parseFalseE,
	})
}

// maxSafe is Number.MAX_SAFE_INTEGER.
const maxSafe = 1<<53 - 1

// jsInteger is the library's Integer(text): Number(text) when that is
// a safe integer (-0 made 0), else BigInt.asIntN(64, text); ok is
// false where both fail (the library's isNaN()).
func jsInteger(text string) (v any, ok bool) {
	n, good := new(big.Int).SetString(text, 0)
	if !good {
		return nil, false
	}
	if n.IsInt64() && n.Int64() <= maxSafe && n.Int64() >= -maxSafe {
		return float64(n.Int64()), true
	}
	// BigInt.asIntN(64): the low 64 bits, as a signed number.
	low := new(big.Int).And(n, new(big.Int).SetUint64(math.MaxUint64))
	return BigInt(int64(low.Uint64())), true
}

// jsFloat is Number(text) for the float texts the library builds.
func jsFloat(text string) float64 {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return f
}

func (p *parser) integer() integerBox {
	v, ok := jsInteger(p.st.bufString())
	if !ok {
		p.fail("Invalid number")
	}
	return integerBox{v}
}

func (p *parser) parseInf(any) {
	if p.char != 'n' {
		p.fail(`Unexpected character, expected "inf", "+inf" or "-inf"`)
	}
	p.next(sInf2)
}

func (p *parser) parseInf2(any) {
	if p.char != 'f' {
		p.fail(`Unexpected character, expected "inf", "+inf" or "-inf"`)
	}
	if p.st.bufString() == "-" {
		p.ret(math.Inf(-1))
	} else {
		p.ret(math.Inf(1))
	}
}

func (p *parser) parseNan(any) {
	if p.char != 'a' {
		p.fail(`Unexpected character, expected "nan"`)
	}
	p.next(sNan2)
}

func (p *parser) parseNan2(any) {
	if p.char != 'n' {
		p.fail(`Unexpected character, expected "nan"`)
	}
	p.ret(math.NaN())
}

func (p *parser) parseNumberSign(any) {
	p.consume()
	p.next(sMaybeSignedInfOrNan)
}

func (p *parser) parseMaybeSignedInfOrNan(any) {
	switch p.char {
	case 'i':
		p.next(sInf)
	case 'n':
		p.next(sNan)
	default:
		p.callNow(sNoUnder, sNumberIntegerStart)
	}
}

func (p *parser) parseNumberIntegerStart(any) {
	if p.char == '0' {
		p.consume()
		p.next(sNumberIntegerExponentOrDecimal)
	} else {
		p.jump(sNumberInteger)
	}
}

func (p *parser) parseNumberIntegerExponentOrDecimal(any) {
	switch p.char {
	case '.':
		p.consume()
		p.call(sNoUnder, sNumberFloat)
	case 'E', 'e':
		p.consume()
		p.next(sNumberExponentSign)
	default:
		v, _ := jsInteger(p.st.bufString())
		p.retNow(integerBox{v})
	}
}

func (p *parser) parseNumberInteger(any) {
	switch c := p.char; {
	case isDigit(c):
		p.consume()
	case c == '_':
		p.call(sNoUnder, sNone)
	case c == 'E' || c == 'e':
		p.consume()
		p.next(sNumberExponentSign)
	case c == '.':
		p.consume()
		p.call(sNoUnder, sNumberFloat)
	default:
		p.retNow(p.integer())
	}
}

func (p *parser) parseNoUnder(any) {
	switch {
	case p.char == '_' || p.char == '.' || p.char == 'E' || p.char == 'e':
		p.fail("Unexpected character, expected digit")
	case p.atEndOfWord():
		p.fail("Incomplete number")
	}
	p.retBufNow()
}

func (p *parser) parseNoUnderHexOctBinLiteral(any) {
	switch {
	case p.char == '_' || p.char == '.':
		p.fail("Unexpected character, expected digit")
	case p.atEndOfWord():
		p.fail("Incomplete number")
	}
	p.retBufNow()
}

func (p *parser) parseNumberFloat(any) {
	switch c := p.char; {
	case c == '_':
		p.call(sNoUnder, sNumberFloat)
	case isDigit(c):
		p.consume()
	case c == 'E' || c == 'e':
		p.consume()
		p.next(sNumberExponentSign)
	default:
		p.retNow(floatBox(jsFloat(p.st.bufString())))
	}
}

func (p *parser) parseNumberExponentSign(any) {
	switch c := p.char; {
	case isDigit(c):
		p.jump(sNumberExponent)
	case c == '-' || c == '+':
		p.consume()
		p.call(sNoUnder, sNumberExponent)
	default:
		p.fail("Unexpected character, expected -, + or digit")
	}
}

func (p *parser) parseNumberExponent(any) {
	switch c := p.char; {
	case isDigit(c):
		p.consume()
	case c == '_':
		p.call(sNoUnder, sNone)
	default:
		p.retNow(floatBox(jsFloat(p.st.bufString())))
	}
}

func (p *parser) parseNumberOrDateTime(any) {
	if p.char == '0' {
		p.consume()
		p.next(sNumberBaseOrDateTime)
	} else {
		p.jump(sNumberOrDateTimeOnly)
	}
}

func (p *parser) parseNumberOrDateTimeOnly(any) {
	switch c := p.char; {
	case c == '_':
		p.call(sNoUnder, sNumberInteger)
	case isDigit(c):
		p.consume()
		if len(p.st.buf) > 4 {
			p.next(sNumberInteger)
		}
	case c == 'E' || c == 'e':
		p.consume()
		p.next(sNumberExponentSign)
	case c == '.':
		p.consume()
		p.call(sNoUnder, sNumberFloat)
	case c == '-':
		p.jump(sDateTime)
	case c == ':':
		p.jump(sOnlyTimeHour)
	default:
		v, _ := jsInteger(p.st.bufString())
		p.retNow(integerBox{v})
	}
}

func (p *parser) parseDateTimeOnly(any) {
	if len(p.st.buf) < 4 {
		switch {
		case isDigit(p.char):
			p.consume()
		case p.char == ':':
			p.jump(sOnlyTimeHour)
		default:
			p.fail("Expected digit while parsing year part of a date")
		}
		return
	}
	if p.char != '-' {
		p.fail("Expected hyphen (-) while parsing year part of date")
	}
	p.jump(sDateTime)
}

func (p *parser) parseNumberBaseOrDateTime(any) {
	switch c := p.char; {
	case c == 'b':
		p.consume()
		p.call(sNoUnderHexOctBinLiteral, sIntegerBin)
	case c == 'o':
		p.consume()
		p.call(sNoUnderHexOctBinLiteral, sIntegerOct)
	case c == 'x':
		p.consume()
		p.call(sNoUnderHexOctBinLiteral, sIntegerHex)
	case c == '.':
		p.jump(sNumberInteger)
	case isDigit(c):
		p.jump(sDateTimeOnly)
	default:
		v, _ := jsInteger(p.st.bufString())
		p.retNow(integerBox{v})
	}
}

func (p *parser) parseIntegerHex(any) { p.baseDigits(isHexit) }

func (p *parser) parseIntegerOct(any) {
	p.baseDigits(func(c rune) bool { return c >= '0' && c <= '7' })
}

func (p *parser) parseIntegerBin(any) {
	p.baseDigits(func(c rune) bool { return c == '0' || c == '1' })
}

func (p *parser) baseDigits(digit func(rune) bool) {
	switch {
	case digit(p.char):
		p.consume()
	case p.char == '_':
		p.call(sNoUnderHexOctBinLiteral, sNone)
	default:
		p.retNow(p.integer())
	}
}

// word reads the rest of true or false, one letter per state.
func (p *parser) word(want rune, next stateID, value any) {
	if p.char != want {
		p.fail("Invalid boolean, expected true or false")
	}
	if next == sNone {
		p.ret(value)
		return
	}
	p.consume()
	p.next(next)
}

func (p *parser) parseBoolean(any) {
	switch p.char {
	case 't':
		p.consume()
		p.next(sTrueR)
	case 'f':
		p.consume()
		p.next(sFalseA)
	}
}

func (p *parser) parseTrueR(any)  { p.word('r', sTrueU, nil) }
func (p *parser) parseTrueU(any)  { p.word('u', sTrueE, nil) }
func (p *parser) parseTrueE(any)  { p.word('e', sNone, true) }
func (p *parser) parseFalseA(any) { p.word('a', sFalseL, nil) }
func (p *parser) parseFalseL(any) { p.word('l', sFalseS, nil) }
func (p *parser) parseFalseS(any) { p.word('s', sFalseE, nil) }
func (p *parser) parseFalseE(any) { p.word('e', sNone, false) }
