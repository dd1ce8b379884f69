package agenttoml

// The inline arrays and inline tables.

func init() {
	register(map[stateID]func(*parser, any){
		sInlineList: (*parser).parseInlineList, sRecordInlineListValue: (*parser).recordInlineListValue,
		sInlineListNext: (*parser).parseInlineListNext, sInlineTable: (*parser).parseInlineTable,
		sRecordInlineTableValue: (*parser).recordInlineTableValue, sInlineTableNext: (*parser).parseInlineTableNext,
	})
}

// tomlType is the library's type of a value in an inline array: the
// items of one must share it. inf and nan, unboxed numbers, are
// "number", apart from "float".
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case integerBox:
		return "integer"
	case floatBox:
		return "float"
	case Datetime:
		return "datetime"
	case *list:
		return "inline-list"
	case *Table:
		return "inline-table"
	}
	return "undefined"
}

func (p *parser) parseInlineList(any) {
	switch p.char {
	case ' ', '\t', '\r', '\n':
	case end:
		p.fail("Unterminated inline array")
	case '#':
		p.call(sComment, sNone)
	case ']':
		if p.st.arr == nil {
			p.ret(&list{inline: true})
		} else {
			p.ret(p.st.arr)
		}
	default:
		p.callNow(sValue, sRecordInlineListValue)
	}
}

func (p *parser) recordInlineListValue(ret any) {
	t := tomlType(ret)
	if p.st.arr == nil {
		p.st.arr = &list{inline: true, contentType: t}
	} else if p.st.arr.contentType != t {
		p.fail("Inline lists must be a single type, not a mix of %s and %s", p.st.arr.contentType, t)
	}
	p.st.arr.items = append(p.st.arr.items, unbox(ret))
	p.jump(sInlineListNext)
}

func (p *parser) parseInlineListNext(any) {
	switch p.char {
	case ' ', '\t', '\r', '\n':
	case '#':
		p.call(sComment, sNone)
	case ',':
		p.next(sInlineList)
	case ']':
		p.jump(sInlineList)
	default:
		p.fail("Invalid character, expected whitespace, comma (,) or close bracket (])")
	}
}

func (p *parser) parseInlineTable(any) {
	switch p.char {
	case ' ', '\t':
	case end, '#', '\n', '\r':
		p.fail("Unterminated inline array")
	case '}':
		if p.st.table == nil {
			p.ret(newTable(true))
		} else {
			p.ret(p.st.table)
		}
	default:
		if p.st.table == nil {
			p.st.table = newTable(true)
		}
		p.callNow(sAssign, sRecordInlineTableValue)
	}
}

func (p *parser) recordInlineTableValue(ret any) {
	p.assign(p.st.table, ret.(kv))
	p.jump(sInlineTableNext)
}

func (p *parser) parseInlineTableNext(any) {
	switch p.char {
	case ' ', '\t':
	case end, '#', '\n', '\r':
		p.fail("Unterminated inline array")
	case ',':
		p.next(sInlineTable)
	case '}':
		p.jump(sInlineTable)
	default:
		p.fail("Invalid character, expected whitespace, comma (,) or close bracket (])")
	}
}
