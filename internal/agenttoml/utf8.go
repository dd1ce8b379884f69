package agenttoml

// decodeUTF8 decodes b as Node decodes a file read with 'utf-8'
// (Buffer.toString, V8's decoder): the WHATWG UTF-8 decoder, which puts
// one U+FFFD for each maximal ill-formed subsequence (where Go's
// range loop puts one per byte), and leaves a byte-order mark in place.
func decodeUTF8(b []byte) []rune {
	out := make([]rune, 0, len(b))
	var cp rune
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if needed == 0 {
			switch {
			case c <= 0x7F:
				out = append(out, rune(c))
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				} else if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0x0F)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				} else if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x07)
			default:
				out = append(out, 0xFFFD)
			}
			continue
		}
		if c < lower || c > upper {
			// The sequence ends ill-formed; c starts afresh.
			cp, needed, seen = 0, 0, 0
			lower, upper = 0x80, 0xBF
			out = append(out, 0xFFFD)
			i--
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		seen++
		if seen == needed {
			out = append(out, cp)
			cp, needed, seen = 0, 0, 0
		}
	}
	if needed != 0 {
		out = append(out, 0xFFFD)
	}
	return out
}
