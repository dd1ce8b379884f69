package extension

import (
	"errors"
	"strings"
	"testing"
)

// TestToolOutputSchema checks a tool's outputSchema: kept as written for
// a JSON tool, refused for a text tool and when it is not an object
// schema (MCP's structured results are objects).
func TestToolOutputSchema(t *testing.T) {
	for _, c := range []struct {
		name, tool, want string
	}{
		{"kept", `"output": "json", "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}`, ""},
		{"text tool", `"outputSchema": {"type": "object"}`, "is given for a tool whose output is not JSON"},
		{"not an object", `"output": "json", "outputSchema": {"type": "array"}`, "is not a JSON Schema of an object"},
		{"not a schema", `"output": "json", "outputSchema": "object"`, "is not a JSON Schema of an object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"gemini-extension.json": `{"name": "e", "version": "1.0.0",
				 "tools": [{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", ` + c.tool + `}]}`,
				"t.sh": "echo '{}'",
			})
			ext, err := Load(dir)
			var ve *ValidationError
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want == "":
				if got := string(ext.Manifest.Tools[0].OutputSchema); !strings.Contains(got, `"n": {"type": "integer"}`) {
					t.Errorf("outputSchema %s", got)
				}
			case !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Path != "tools[0].outputSchema" ||
				!strings.Contains(ve.Problems[0].Message, c.want) || ve.Problems[0].Fix == "":
				t.Errorf("Load: %v, want one problem at tools[0].outputSchema: %s", err, c.want)
			}
		})
	}
}
