package extmcp

import "testing"

// TestToolError: a result is taken for a tool error, which Call reads
// for refused writes, whenever "isError" is true as a member, however
// the server spaced it; false, or the words in a text, are not.
func TestToolError(t *testing.T) {
	for res, want := range map[string]bool{
		`{"content":[],"isError":true}`:                            true,
		`{"isError" : true, "content": []}`:                        true,
		"{\"content\":[],\"isError\":\n\ttrue}":                    true,
		`{"content":[],"isError":false}`:                           false,
		`{"content":[{"type":"text","text":"\"isError\": true"}]}`: false,
		`{"a\"isError": true}`:                                     true, // a member's name that ends so: answered as Call does
		`{"content":[{"type":"text","text":"isError true"}]}`:      false,
		`{"content":[]}`:                                           false,
		`{"isError":false,"x":{"isError":true}}`:                   true,
	} {
		if got := toolError([]byte(res)); got != want {
			t.Errorf("%s: %v, want %v", res, got, want)
		}
	}
}
