package jsonrpc

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// CheckJSONText reports whether a JSON text carries only valid Unicode
// text: UTF-8 throughout, and no \u escape of a lone UTF-16 surrogate.
// encoding/json replaces either with U+FFFD without a word, so a file
// content with Latin-1 bytes would be written changed while the caller
// is told it succeeded; every path that takes file content from outside
// checks the raw bytes with this first and refuses what fails.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return fmt.Errorf("the text is not valid UTF-8 (first bad byte 0x%02X at byte offset %d); send file content as UTF-8", b[off], off)
	}
	// A backslash appears only inside JSON strings, so no string tracking
	// is needed: go from backslash to backslash, and walk escapes two
	// bytes at a time.
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		if i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++
			continue
		}
		u, ok := hex4(b, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case u >= 0xD800 && u <= 0xDBFF:
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return fmt.Errorf("the text holds a lone UTF-16 surrogate escape \\u%04X at byte offset %d, which is not a character; send file content as valid Unicode", u, i)
		case u >= 0xDC00 && u <= 0xDFFF:
			return fmt.Errorf("the text holds a lone UTF-16 surrogate escape \\u%04X at byte offset %d, which is not a character; send file content as valid Unicode", u, i)
		}
		i += 5
	}
	return nil
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}
