package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// TestServerToolDescriptionCut: a switched server's tool description is
// served whole up to extension.MaxDescription characters (counted in
// characters, not bytes), and past it cut there with a marker naming
// its length and the bound; the input schema stays whole.
func TestServerToolDescriptionCut(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "e", "version": "1"}`})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const max = extension.MaxDescription
	for _, c := range []struct {
		name string
		desc string
		want string // the start of the served description
		cut  bool
	}{
		{"short", "Reads a file.", "Reads a file.\n\nFrom the extension e", false},
		{"at the bound", strings.Repeat("d", max), strings.Repeat("d", max) + "\n\nFrom", false},
		{"at the bound, in characters of 3 bytes", strings.Repeat("€", max), strings.Repeat("€", max) + "\n\nFrom", false},
		{"one past", strings.Repeat("d", max+1), strings.Repeat("d", max) + " … [cut by gemkit: the server's description is 8193 characters, past the 8192 gemkit serves]\n\nFrom", true},
		{"100,000 of 3 bytes", strings.Repeat("€", 100000), strings.Repeat("€", max) + " … [cut by gemkit: the server's description is 100000 characters", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"path":{"type":"string"}}}`
			s.mu.Lock()
			s.ext.tools = []extmcp.Tool{{Spec: extmcp.Spec{Extension: "e", Server: "s"},
				Tool: mcpclient.Tool{Name: "read", Description: c.desc, InputSchema: json.RawMessage(schema)}}}
			out := s.serverTools(s.set.Load())
			s.mu.Unlock()
			if len(out) != 1 {
				t.Fatalf("served %d tools, want 1", len(out))
			}
			d := out[0].tool.Description
			if !strings.HasPrefix(d, c.want) || !utf8.ValidString(d) {
				t.Errorf("served description starts %.80q… (%d characters), want %.80q…", d, utf8.RuneCountInString(d), c.want)
			}
			if got := strings.Contains(d, "[cut by gemkit"); got != c.cut {
				t.Errorf("cut marker present %v, want %v", got, c.cut)
			}
			if got, _ := json.Marshal(out[0].tool.InputSchema); string(got) != schema {
				t.Errorf("input schema %s, want it whole", got)
			}
		})
	}
}

// objectSchemaByDecoding is the rule objectSchema keeps: the schema
// decoded whole, its "type" "object".
func objectSchemaByDecoding(schema []byte) bool {
	var m map[string]any
	return json.Unmarshal(schema, &m) == nil && m["type"] == "object"
}

// TestObjectSchema: the one pass over a schema's top level answers as
// decoding it whole does.
func TestObjectSchema(t *testing.T) {
	t.Parallel()
	for _, schema := range objectSchemaSeeds {
		if got, want := objectSchema([]byte(schema)), objectSchemaByDecoding([]byte(schema)); got != want {
			t.Errorf("objectSchema(%s) = %v, want %v", schema, got, want)
		}
	}
}

var objectSchemaSeeds = []string{
	`{"type":"object"}`,
	` { "type" : "object" , "properties" : {"a": {"type": "string"}} } `,
	`{"properties":{"type":"object"}}`,
	`{"type":"object","type":"array"}`,
	`{"type":"array","type":"object"}`,
	`{"type":"\u006fbject"}`,
	`{"\u0074ype":"object"}`,
	`{"type":["object"]}`,
	`{"type":"object"} x`,
	`{"type":"object"`,
	`["type","object"]`,
	`"object"`,
	`null`,
	``,
	`{"type":"object","a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"type":"object","a":"\xff"}`,
	`{"type":"Object"}`,
}

func FuzzObjectSchema(f *testing.F) {
	for _, s := range objectSchemaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		if got, want := objectSchema(schema), objectSchemaByDecoding(schema); got != want {
			t.Errorf("objectSchema(%q) = %v, decoding says %v", schema, got, want)
		}
	})
}
