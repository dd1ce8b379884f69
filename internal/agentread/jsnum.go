package agentread

import (
	"math"
	"strconv"
	"strings"
)

// StringToNumber is JavaScript's ToNumber of a string (ECMA-262
// StringToNumber): white space and line terminators around it are
// trimmed; "" is 0; "Infinity" with a sign is ±Infinity; a decimal
// literal (digits, a point, an exponent, a sign; "010" is ten) or a
// 0x, 0o or 0b literal without a sign is its value; anything else is NaN.
// ok is false where the value would need more than a float64's exact
// integers to tell (a long 0x literal): callers treat it as unknown.
func StringToNumber(s string) (n float64, ok bool) {
	s = strings.TrimFunc(s, isJSSpace)
	if s == "" {
		return 0, true
	}
	switch s {
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	if len(s) > 2 && s[0] == '0' {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[1]]
		if base != 0 {
			u, err := strconv.ParseUint(s[2:], base, 64)
			switch {
			case err == nil && u <= 1<<53:
				return float64(u), true
			case err == nil || isDigitsOf(s[2:], base):
				return 0, false
			}
			return math.NaN(), true
		}
	}
	if !isDecimalLiteral(s) {
		return math.NaN(), true
	}
	// Validated above; past the range ParseFloat gives ±Inf (and 0
	// below it), as JavaScript does.
	n, _ = strconv.ParseFloat(s, 64)
	return n, true
}

// isDecimalLiteral is ECMA-262's StrDecimalLiteral, without Infinity.
func isDecimalLiteral(s string) bool {
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" || !isDigitsOf(whole, 10) && whole != "" || !isDigitsOf(frac, 10) && frac != "" {
		return false
	}
	if !hasExp {
		return true
	}
	if exp != "" && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	return isDigitsOf(exp, 10)
}

func isDigitsOf(s string, base int) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		d := -1
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'z':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int(c-'A') + 10
		}
		if d < 0 || d >= base {
			return false
		}
	}
	return true
}

// isJSSpace is ECMA-262's WhiteSpace and LineTerminator.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// JSString is JavaScript's String of v when v is a primitive: a string
// as it is, a number as NumberString writes it, true, false, null. ok is
// false for an array or an object, whose String a caller should not
// need.
func (v Value) JSString() (string, bool) {
	switch v.kind {
	case String:
		return v.s, true
	case Number:
		return NumberString(v.n), true
	case Bool:
		return strconv.FormatBool(v.b), true
	case Null:
		return "null", true
	case Undefined:
		return "undefined", true
	}
	return "", false
}
