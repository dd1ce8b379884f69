package agentread

import (
	"errors"
	"testing"
)

// TestParseJSONUnique: a member given twice, at any depth and however
// its name is escaped, is refused by name; ParseJSON keeps the last, as
// JSON.parse does.
func TestParseJSONUnique(t *testing.T) {
	for _, tc := range []struct {
		text, key string
	}{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": 1, "a": 2}`, "a"},
		{`{"x": {"y": [{"k": 1, "k": 1}]}}`, "k"},
		{`{"name": "p", "n\u0061me": "q"}`, "name"},
		{`{"a": {"b": 1}, "c": {"b": 2}}`, ""},
	} {
		_, err := ParseJSONUnique([]byte(tc.text))
		var de *DuplicateKeyError
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: %v", tc.text, err)
		case tc.key != "" && (!errors.As(err, &de) || de.Key != tc.key):
			t.Errorf("%s: got %v, want the key %q given twice", tc.text, err, tc.key)
		}
		if _, err := ParseJSON([]byte(tc.text)); err != nil {
			t.Errorf("ParseJSON(%s): %v", tc.text, err)
		}
	}
}
