package agenttoml

// The states of @iarna/toml's lib/toml-parser.js, each named for the
// method it ports (parseStart is sStart).
const (
	sNone stateID = iota
	sStart
	sWhitespaceToEOL
	sAssignStatement
	sRecordAssignStatement
	sAssign
	sRecordAssignKeyword
	sAssignKeywordPreDot
	sAssignKeywordPostDot
	sAssignEqual
	sAssignPreValue
	sRecordAssignValue
	sComment
	sTableOrList
	sTable
	sTableNext
	sTableMore
	sList
	sListNext
	sListMore
	sListEnd
	sValue
	sRecordValue
	sInf
	sInf2
	sNan
	sNan2
	sKeyword
	sBareKey
	sSingleString
	sLiteralString
	sLiteralMultiStringMaybe
	sLiteralMultiString
	sLiteralMultiStringContent
	sLiteralMultiEnd
	sLiteralMultiEnd2
	sDoubleString
	sBasicString
	sRecordEscapeReplacement
	sMultiStringMaybe
	sMultiString
	sMultiStringContent
	sRecordMultiEscapeReplacement
	sMultiEnd
	sMultiEnd2
	sMultiEscape
	sPreMultiTrim
	sMultiTrim
	sEscape
	sUnicodeReturn
	sSmallUnicode
	sLargeUnicode
	sNumberSign
	sMaybeSignedInfOrNan
	sNumberIntegerStart
	sNumberIntegerExponentOrDecimal
	sNumberInteger
	sNoUnder
	sNoUnderHexOctBinLiteral
	sNumberFloat
	sNumberExponentSign
	sNumberExponent
	sNumberOrDateTime
	sNumberOrDateTimeOnly
	sDateTimeOnly
	sNumberBaseOrDateTime
	sIntegerHex
	sIntegerOct
	sIntegerBin
	sDateTime
	sDateMonth
	sDateDay
	sStartTimeHour
	sTimeHour
	sTimeMin
	sTimeSec
	sOnlyTimeHour
	sOnlyTimeMin
	sOnlyTimeSec
	sOnlyTimeFractionMaybe
	sOnlyTimeFraction
	sTimeZoneOrFraction
	sDateTimeFraction
	sTimeZoneHour
	sTimeZoneSep
	sTimeZoneMin
	sBoolean
	sTrueR
	sTrueU
	sTrueE
	sFalseA
	sFalseL
	sFalseS
	sFalseE
	sInlineList
	sRecordInlineListValue
	sInlineListNext
	sInlineTable
	sRecordInlineTableValue
	sInlineTableNext
	nStates
)

// states are the state functions by stateID, filled in by the files
// that hold them (an initializer here would refer to itself through
// runOne).
var states [nStates]func(p *parser, returned any)

func register(m map[stateID]func(*parser, any)) {
	for id, fn := range m {
		states[id] = fn
	}
}
