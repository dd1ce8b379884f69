package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestMisfit(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref.json")
	os.WriteFile(ref, []byte(`{"type": "object", "required": ["secret"]}`), 0o600)
	html := `{"type": "object", "properties": {"html": {"type": "string"}, "n": {"type": "integer"}, "o": {"type": "object", "properties": {"a": {"type": "string"}}}}, "required": ["html"]}`
	for _, c := range []struct{ name, schema, out, want string }{
		{"fits", html, `{"html": "<b>", "n": 2}`, ""},
		{"missing", html, `{"text": "x"}`, `at the top: required: missing properties: ["html"]`},
		{"wrong type", html, `{"html": "x", "n": "two"}`, `at /properties/n: type: two has type "string", want "integer"`},
		{"nested", html, `{"html": "x", "o": {"a": 3}}`, `at /properties/o/properties/a: type: 3 has type "integer", want "string"`},
		{"not an object", html, `{"value": [1]}`, `at the top: required: missing properties: ["html"]`},
		// The drafts' meta-schemas are built in, not loaded.
		{"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["html"]}`, `{}`, `at the top: required: missing properties: ["html"]`},
		{"2020-12", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["html"]}`, `{}`, `at the top: required: missing properties: ["html"]`},
		// A local $ref resolves.
		{"local ref", `{"$ref": "#/$defs/a", "$defs": {"a": {"required": ["x"]}}}`, `{}`, `at /$defs/a: required: missing properties: ["x"]`},
		// A schema that does not resolve is left to the client.
		{"no schema", `{"type": 7}`, `{}`, ""},
		// A $ref reads no file: the schema does not resolve, nothing is
		// said of the file.
		{"ref", `{"$ref": "file://` + ref + `"}`, `{}`, ""},
	} {
		if got := misfit(json.RawMessage(c.schema), json.RawMessage(c.out)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
