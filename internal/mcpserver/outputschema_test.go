package mcpserver_test

import (
	"strings"
	"testing"
)

// TestDeclaredOutputSchema: a JSON tool whose output does not fit the
// outputSchema its manifest declares is a tool error that says so and
// shows the output, not a result the client refuses. The client is the
// TypeScript SDK's, which checks structuredContent against the schema
// from tools/list and throws "Structured content does not match the
// tool's output schema" (src/client/index.ts, callTool).
func TestDeclaredOutputSchema(t *testing.T) {
	f := newFixture(t)
	schema := `"outputSchema": {"type": "object", "properties": {"html": {"type": "string"}}, "required": ["html"]}`
	f.link(t, "shapes", `{"name": "shapes", "version": "1.0.0", "description": "Shapes.",
	 "tools": [{"name": "fits", "description": "Fits.", "executable": "tools/fits.sh", "runtime": "shell", "output": "json", `+schema+`},
	           {"name": "misses", "description": "Misses.", "executable": "tools/misses.sh", "runtime": "shell", "output": "json", `+schema+`},
	           {"name": "list", "description": "A list.", "executable": "tools/list.sh", "runtime": "shell", "output": "json", `+schema+`}]}`,
		map[string]string{
			"tools/fits.sh":   `echo '{"html": "<b>"}'` + "\n",
			"tools/misses.sh": `echo '{"text": "no html"}'` + "\n",
			"tools/list.sh":   `echo '[1, 2]'` + "\n",
		})
	c := startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws)
	c.do(map[string]any{"op": "listTools"}, nil)

	res := c.call(map[string]any{"op": "callTool", "name": "shapes_fits"})
	if res.IsError || res.StructuredContent["html"] != "<b>" {
		t.Errorf("fits: %+v", res)
	}
	for _, tc := range []struct{ name, output string }{
		{"shapes_misses", `{"text": "no html"}`},
		{"shapes_list", `[1, 2]`},
	} {
		var r toolResult
		if err := c.try(map[string]any{"op": "callTool", "name": tc.name}, &r); err != nil {
			t.Errorf("%s: the client refused the result: %v", tc.name, err)
			continue
		}
		if txt := r.text(); !r.IsError || r.StructuredContent != nil || !strings.Contains(txt, "does not fit the outputSchema") ||
			!strings.Contains(txt, "html") || !strings.Contains(txt, tc.output) {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}
