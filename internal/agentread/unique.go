package agentread

import (
	"fmt"
	"strconv"
)

// DuplicateKeyError says that one object of a text gives a member twice.
// JSON leaves such a text's meaning open (RFC 8259 §4: names SHOULD be
// unique): JSON.parse keeps the last value, other readers the first, or
// refuse it. A file read for agents that parse it differently has no one
// reading, and gemkit takes none.
type DuplicateKeyError struct {
	Key string
	// Offset is the byte where the second one begins.
	Offset int
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("the key %s is given twice in one object (the second at byte %d); JSON readers disagree on which one counts, so gemkit reads neither: keep one", strconv.Quote(e.Key), e.Offset)
}

// ParseJSONUnique is [ParseJSON] that refuses, with a
// [*DuplicateKeyError], a text in which one object gives a member twice:
// for files that several agents read, each with its own JSON parser
// (an Agent Plugins package's plugin.json and mcp.json).
func ParseJSONUnique(text []byte) (Value, error) { return parseJSON(text, true) }
