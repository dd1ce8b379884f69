package agenttoml

import (
	"regexp"
	"strconv"
	"strings"
)

// The dates and times. The library builds each as a JavaScript Date
// from a text, and throws "Invalid Datetime" when V8's Date parser
// returns NaN. V8's parser takes some texts outside ISO 8601 by a
// fallback of its own (a month of three digits): gemkit answers for the
// canonical shapes only, whose validity V8 decides by the ranges below,
// and calls the rest uncertain.

func init() {
	register(map[stateID]func(*parser, any){
		sDateTime: (*parser).parseDateTime, sDateMonth: (*parser).parseDateMonth, sDateDay: (*parser).parseDateDay,
		sStartTimeHour: (*parser).parseStartTimeHour, sTimeHour: (*parser).parseTimeHour, sTimeMin: (*parser).parseTimeMin,
		sTimeSec: (*parser).parseTimeSec, sOnlyTimeHour: (*parser).parseOnlyTimeHour, sOnlyTimeMin: (*parser).parseOnlyTimeMin,
		sOnlyTimeSec: (*parser).parseOnlyTimeSec, sOnlyTimeFractionMaybe: (*parser).parseOnlyTimeFractionMaybe,
		sOnlyTimeFraction: (*parser).parseOnlyTimeFraction, sTimeZoneOrFraction: (*parser).parseTimeZoneOrFraction,
		sDateTimeFraction: (*parser).parseDateTimeFraction, sTimeZoneHour: (*parser).parseTimeZoneHour,
		sTimeZoneSep: (*parser).parseTimeZoneSep, sTimeZoneMin: (*parser).parseTimeZoneMin,
	})
}

// jsDateText is the one shape of text whose Date V8 builds by ISO 8601's
// rules alone: a date of 4-2-2 digits, then a time of 2:2:2 digits with
// a fraction, then Z or an offset of 2:2 digits.
var jsDateText = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-](\d{2}):(\d{2})))?$`)

// dateValid says whether new Date(text) is a date (not NaN) in V8;
// known is false where gemkit cannot tell. A text of the canonical shape
// with every field in its range is one; out of range, V8's fallback
// parser may still take it ("0001-13-27" is a date, "2021-13-01" not).
func dateValid(text string) (valid, known bool) {
	m := jsDateText.FindStringSubmatch(text)
	if m == nil {
		return false, false
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	inRange := n(2) >= 1 && n(2) <= 12 && n(3) >= 1 && n(3) <= 31
	if m[4] != "" {
		h, mi, s := n(4), n(5), n(6)
		inRange = inRange && mi <= 59 && s <= 59 && (h < 24 || h == 24 && mi == 0 && s == 0 && strings.Trim(m[7], "0") == "")
		if m[9] != "" {
			inRange = inRange && n(9) <= 23 && n(10) <= 59
		}
	}
	return inRange, inRange
}

// makeDate is the library's Date of kind from text, the text V8 parses,
// with written the value as the document wrote it.
func (p *parser) makeDate(kind, text, written string) Datetime {
	valid, known := dateValid(text)
	if !valid || !known {
		p.uncertain("whether JavaScript takes %q for a date is V8's to say, not gemkit's", written)
	}
	return Datetime{Kind: kind, Text: written}
}

func (p *parser) createDate(text string) Datetime { return p.makeDate("date", text, text) }

func (p *parser) createDateTime(text string) Datetime { return p.makeDate("offset", text, text) }

func (p *parser) createDateTimeFloat(text string) Datetime {
	return p.makeDate("local", text+"Z", text)
}

func (p *parser) createTime(text string) Datetime {
	return p.makeDate("time", "0000-01-01T"+text+"Z", text)
}

func (p *parser) parseDateTime(any) {
	if len(p.st.buf) < 4 {
		p.fail("Years less than 1000 must be zero padded to four characters")
	}
	p.st.result = p.st.bufString()
	p.st.buf = nil
	p.next(sDateMonth)
}

func (p *parser) parseDateMonth(any) {
	switch {
	case p.char == '-':
		if len(p.st.buf) < 2 {
			p.fail("Months less than 10 must be zero padded to two characters")
		}
		p.st.result += "-" + p.st.bufString()
		p.st.buf = nil
		p.next(sDateDay)
	case isDigit(p.char):
		p.consume()
	default:
		p.fail("Incomplete datetime")
	}
}

func (p *parser) parseDateDay(any) {
	switch {
	case p.char == 'T' || p.char == ' ':
		if len(p.st.buf) < 2 {
			p.fail("Days less than 10 must be zero padded to two characters")
		}
		p.st.result += "-" + p.st.bufString()
		p.st.buf = nil
		p.next(sStartTimeHour)
	case p.atEndOfWord():
		p.retNow(p.createDate(p.st.result + "-" + p.st.bufString()))
	case isDigit(p.char):
		p.consume()
	default:
		p.fail("Incomplete datetime")
	}
}

func (p *parser) parseStartTimeHour(any) {
	if p.atEndOfWord() {
		p.retNow(p.createDate(p.st.result))
	} else {
		p.jump(sTimeHour)
	}
}

func (p *parser) parseTimeHour(any) {
	switch {
	case p.char == ':':
		if len(p.st.buf) < 2 {
			p.fail("Hours less than 10 must be zero padded to two characters")
		}
		p.st.result += "T" + p.st.bufString()
		p.st.buf = nil
		p.next(sTimeMin)
	case isDigit(p.char):
		p.consume()
	default:
		p.fail("Incomplete datetime")
	}
}

// twoDigits reads minutes or seconds: two digits, then a colon when
// more follows (sep), on to next; what says what is read, for the
// error.
func (p *parser) twoDigits(next stateID, what string) {
	switch {
	case len(p.st.buf) < 2 && isDigit(p.char):
		p.consume()
	case len(p.st.buf) == 2 && p.char == ':':
		p.st.result += ":" + p.st.bufString()
		p.st.buf = nil
		p.next(next)
	default:
		p.fail("Incomplete %s", what)
	}
}

func (p *parser) parseTimeMin(any) { p.twoDigits(sTimeSec, "datetime") }

func (p *parser) parseTimeSec(any) {
	if !isDigit(p.char) {
		p.fail("Incomplete datetime")
	}
	p.consume()
	if len(p.st.buf) == 2 {
		p.st.result += ":" + p.st.bufString()
		p.st.buf = nil
		p.next(sTimeZoneOrFraction)
	}
}

func (p *parser) parseOnlyTimeHour(any) {
	if p.char != ':' {
		p.fail("Incomplete time")
	}
	if len(p.st.buf) < 2 {
		p.fail("Hours less than 10 must be zero padded to two characters")
	}
	p.st.result = p.st.bufString()
	p.st.buf = nil
	p.next(sOnlyTimeMin)
}

func (p *parser) parseOnlyTimeMin(any) { p.twoDigits(sOnlyTimeSec, "time") }

func (p *parser) parseOnlyTimeSec(any) {
	if !isDigit(p.char) {
		p.fail("Incomplete time")
	}
	p.consume()
	if len(p.st.buf) == 2 {
		p.next(sOnlyTimeFractionMaybe)
	}
}

// parseOnlyTimeFractionMaybe returns without running the state below on
// the character that ends the time, which is then lost (the library's
// own: "t = 12:00:00\nb = 1" fails on the b).
func (p *parser) parseOnlyTimeFractionMaybe(any) {
	p.st.result += ":" + p.st.bufString()
	if p.char == '.' {
		p.st.buf = nil
		p.next(sOnlyTimeFraction)
		return
	}
	p.ret(p.createTime(p.st.result))
}

func (p *parser) parseOnlyTimeFraction(any) {
	switch {
	case isDigit(p.char):
		p.consume()
	case p.atEndOfWord():
		if len(p.st.buf) == 0 {
			p.fail("Expected digit in milliseconds")
		}
		p.retNow(p.createTime(p.st.result + "." + p.st.bufString()))
	default:
		p.fail("Unexpected character in datetime, expected period (.), minus (-), plus (+) or Z")
	}
}

// zoneOrEnd takes what may follow a time's seconds or fraction: an
// offset, Z, or the end of the word (a local date-time).
func (p *parser) zoneOrEnd() {
	switch {
	case p.char == '-' || p.char == '+':
		p.consume()
		p.next(sTimeZoneHour)
	case p.char == 'Z':
		p.consume()
		p.ret(p.createDateTime(p.st.result + p.st.bufString()))
	case p.atEndOfWord():
		p.retNow(p.createDateTimeFloat(p.st.result + p.st.bufString()))
	default:
		p.fail("Unexpected character in datetime, expected period (.), minus (-), plus (+) or Z")
	}
}

func (p *parser) parseTimeZoneOrFraction(any) {
	if p.char == '.' {
		p.consume()
		p.next(sDateTimeFraction)
		return
	}
	p.zoneOrEnd()
}

func (p *parser) parseDateTimeFraction(any) {
	switch {
	case isDigit(p.char):
		p.consume()
	case len(p.st.buf) == 1:
		p.fail("Expected digit in milliseconds")
	default:
		p.zoneOrEnd()
	}
}

// endsInTwoDigits is the library's /\d\d$/.
func endsInTwoDigits(b []byte) bool {
	n := len(b)
	return n >= 2 && isDigit(rune(b[n-1])) && isDigit(rune(b[n-2]))
}

func (p *parser) parseTimeZoneHour(any) {
	if !isDigit(p.char) {
		p.fail("Unexpected character in datetime, expected digit")
	}
	p.consume()
	if endsInTwoDigits(p.st.buf) {
		p.next(sTimeZoneSep)
	}
}

func (p *parser) parseTimeZoneSep(any) {
	if p.char != ':' {
		p.fail("Unexpected character in datetime, expected colon")
	}
	p.consume()
	p.next(sTimeZoneMin)
}

func (p *parser) parseTimeZoneMin(any) {
	if !isDigit(p.char) {
		p.fail("Unexpected character in datetime, expected digit")
	}
	p.consume()
	if endsInTwoDigits(p.st.buf) {
		p.ret(p.createDateTime(p.st.result + p.st.bufString()))
	}
}
