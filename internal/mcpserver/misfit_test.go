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
	html := `{"type": "object", "properties": {"html": {"type": "string"}, "n": {"type": "integer"}}, "required": ["html"]}`
	for _, c := range []struct{ name, schema, out, want string }{
		{"fits", html, `{"html": "<b>", "n": 2}`, ""},
		{"missing", html, `{"text": "x"}`, "at '': missing property 'html'"},
		{"wrong type", html, `{"html": "x", "n": "two"}`, "at '/n': got string, want integer"},
		{"not an object", html, `{"value": [1]}`, "at '': missing property 'html'"},
		// The drafts' meta-schemas are built in, not loaded.
		{"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["html"]}`, `{}`, "at '': missing property 'html'"},
		{"2020-12", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["html"]}`, `{}`, "at '': missing property 'html'"},
		// A schema that does not compile is left to the client.
		{"no schema", `{"type": 7}`, `{}`, ""},
		// A $ref reads no file: the schema does not compile, nothing is
		// said of the file.
		{"ref", `{"$ref": "file://` + ref + `"}`, `{}`, ""},
	} {
		if got := misfit(json.RawMessage(c.schema), json.RawMessage(c.out)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
