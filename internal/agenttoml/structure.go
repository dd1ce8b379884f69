package agenttoml

// The statements: assignments, comments, [tables] and [[arrays of
// tables]], and the start of a value.

func init() {
	register(map[stateID]func(*parser, any){
		sStart: (*parser).parseStart, sWhitespaceToEOL: (*parser).parseWhitespaceToEOL,
		sAssignStatement: (*parser).parseAssignStatement, sRecordAssignStatement: (*parser).recordAssignStatement,
		sAssign: (*parser).parseAssign, sRecordAssignKeyword: (*parser).recordAssignKeyword,
		sAssignKeywordPreDot: (*parser).parseAssignKeywordPreDot, sAssignKeywordPostDot: (*parser).parseAssignKeywordPostDot,
		sAssignEqual: (*parser).parseAssignEqual, sAssignPreValue: (*parser).parseAssignPreValue,
		sRecordAssignValue: (*parser).recordAssignValue, sComment: (*parser).parseComment,
		sTableOrList: (*parser).parseTableOrList, sTable: (*parser).parseTable, sTableNext: (*parser).parseTableNext,
		sTableMore: (*parser).parseTableMore, sList: (*parser).parseList, sListNext: (*parser).parseListNext,
		sListMore: (*parser).parseListMore, sListEnd: (*parser).parseListEnd,
		sValue: (*parser).parseValue, sRecordValue: (*parser).recordValue,
		sKeyword: (*parser).parseKeyword, sBareKey: (*parser).parseBareKey,
	})
}

func (p *parser) parseStart(any) {
	switch c := p.char; {
	case c == end:
	case c == '[':
		p.call(sTableOrList, sNone)
	case c == '#':
		p.call(sComment, sNone)
	case c == '\n' || c == ' ' || c == '\t' || c == '\r':
	case isAlphaNumQuoteHyphen(c):
		p.callNow(sAssignStatement, sNone)
	default:
		p.fail("Unknown character \"%d\"", c)
	}
}

// parseWhitespaceToEOL takes whitespace and a comment to the end of the
// line, then returns: the last state of a statement.
func (p *parser) parseWhitespaceToEOL(any) {
	switch c := p.char; {
	case c == ' ' || c == '\t' || c == '\r':
	case c == '#':
		p.jump(sComment)
	case c == end || c == '\n':
		p.retBuf()
	default:
		p.fail("Unexpected character, expected only whitespace or comments till end of line")
	}
}

func (p *parser) parseAssignStatement(any) { p.callNow(sAssign, sRecordAssignStatement) }

func (p *parser) recordAssignStatement(ret any) {
	p.assign(p.ctx, ret.(kv))
	p.jump(sWhitespaceToEOL)
}

func (p *parser) parseAssign(any) { p.callNow(sKeyword, sRecordAssignKeyword) }

func (p *parser) recordAssignKeyword(ret any) {
	p.st.keys = append(p.st.keys, ret.(string))
	p.jump(sAssignKeywordPreDot)
}

func (p *parser) parseAssignKeywordPreDot(any) {
	if p.char == '.' {
		p.next(sAssignKeywordPostDot)
	} else if p.char != ' ' && p.char != '\t' {
		p.jump(sAssignEqual)
	}
}

func (p *parser) parseAssignKeywordPostDot(any) {
	if p.char != ' ' && p.char != '\t' {
		p.callNow(sKeyword, sRecordAssignKeyword)
	}
}

func (p *parser) parseAssignEqual(any) {
	if p.char != '=' {
		p.fail("Invalid character, expected \"=\"")
	}
	p.next(sAssignPreValue)
}

func (p *parser) parseAssignPreValue(any) {
	if p.char != ' ' && p.char != '\t' {
		p.callNow(sValue, sRecordAssignValue)
	}
}

func (p *parser) recordAssignValue(ret any) { p.retNow(kv{keys: p.st.keys, value: ret}) }

func (p *parser) parseComment(any) {
	if p.char == end || p.char == '\n' {
		p.retBuf()
	}
}

func (p *parser) parseTableOrList(any) {
	if p.char == '[' {
		p.next(sList)
	} else {
		p.jump(sTable)
	}
}

func (p *parser) parseTable(any) {
	p.ctx = p.obj
	p.jump(sTableNext)
}

func (p *parser) parseTableNext(any) {
	if p.char != ' ' && p.char != '\t' {
		p.callNow(sKeyword, sTableMore)
	}
}

func (p *parser) parseTableMore(ret any) {
	kw := ret.(string)
	switch p.char {
	case ' ', '\t':
	case ']':
		p.ctx = p.descend(p.ctx, kw)
		p.ctx.declared = true
		p.next(sWhitespaceToEOL)
	case '.':
		v, ok := p.ctx.vals[kw]
		switch x := v.(type) {
		case nil:
			if ok {
				p.fail("Can't redefine existing key")
			}
			t := newTable(false)
			p.ctx.set(kw, t)
			p.ctx = t
		case *Table:
			if x.inline {
				p.fail("Can't redefine existing key")
			}
			p.ctx = x
		case *list:
			if x.inline {
				p.fail("Can't redefine existing key")
			}
			p.ctx = x.items[len(x.items)-1].(*Table)
		default:
			p.fail("Can't redefine existing key")
		}
		p.next(sTableNext)
	default:
		p.fail("Unexpected character, expected whitespace, . or ]")
	}
}

func (p *parser) parseList(any) {
	p.ctx = p.obj
	p.jump(sListNext)
}

func (p *parser) parseListNext(any) {
	if p.char != ' ' && p.char != '\t' {
		p.callNow(sKeyword, sListMore)
	}
}

func (p *parser) parseListMore(ret any) {
	kw := ret.(string)
	switch p.char {
	case ' ', '\t':
	case ']':
		if !p.ctx.has(kw) {
			p.ctx.set(kw, &list{})
		}
		l, ok := p.ctx.vals[kw].(*list)
		switch {
		case ok && l.inline:
			p.fail("Can't extend an inline array")
		case !ok:
			p.fail("Can't redefine an existing key")
		}
		t := newTable(false)
		l.items = append(l.items, t)
		p.ctx = t
		p.next(sListEnd)
	case '.':
		p.ctx = p.listStep(kw)
		p.next(sListNext)
	default:
		p.fail("Unexpected character, expected whitespace, . or ]")
	}
}

// listStep is the table a [[header]] reaches through kw on its way.
func (p *parser) listStep(kw string) *Table {
	v, ok := p.ctx.vals[kw]
	if !ok {
		t := newTable(false)
		p.ctx.set(kw, t)
		return t
	}
	switch x := v.(type) {
	case *list:
		if x.inline {
			p.fail("Can't extend an inline array")
		}
		return x.items[len(x.items)-1].(*Table)
	case *Table:
		if x.inline {
			p.fail("Can't extend an inline table")
		}
		return x
	}
	p.fail("Can't redefine an existing key")
	return nil
}

func (p *parser) parseListEnd(any) {
	if p.char != ']' {
		p.fail("Unexpected character, expected whitespace, . or ]")
	}
	p.next(sWhitespaceToEOL)
}

func (p *parser) parseValue(any) {
	switch c := p.char; {
	case c == end:
		p.fail("Key without value")
	case c == '"':
		p.next(sDoubleString)
	case c == '\'':
		p.next(sSingleString)
	case c == '-' || c == '+':
		p.jump(sNumberSign)
	case c == 'i':
		p.next(sInf)
	case c == 'n':
		p.next(sNan)
	case isDigit(c):
		p.jump(sNumberOrDateTime)
	case c == 't' || c == 'f':
		p.jump(sBoolean)
	case c == '[':
		p.call(sInlineList, sRecordValue)
	case c == '{':
		p.call(sInlineTable, sRecordValue)
	default:
		p.fail("Unexpected character, expecting string, number, datetime, boolean, inline array or inline table")
	}
}

func (p *parser) recordValue(ret any) { p.retNow(ret) }

func (p *parser) parseKeyword(any) {
	switch p.char {
	case '"':
		p.next(sBasicString)
	case '\'':
		p.next(sLiteralString)
	default:
		p.jump(sBareKey)
	}
}

func (p *parser) parseBareKey(any) {
	switch {
	case p.char == end:
		p.fail("Key ended without value")
	case isAlphaNumHyphen(p.char):
		p.consume()
	case len(p.st.buf) == 0:
		p.fail("Empty bare keys are not allowed")
	default:
		p.retBufNow()
	}
}
