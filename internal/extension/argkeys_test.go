package extension

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgOptionsAndUnknownKeys: "required" and "default" are read and
// checked; keys nothing reads are flagged with the key they are a typo of.
func TestArgOptionsAndUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		tool string // the tool object, into a manifest
		mcp  string // the mcpServers value ("" for none)
		top  string // extra top-level members ("" for none)
		want []string
	}{
		{"optional and default are fine", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", "args": [
			{"name": "a", "type": "string", "required": false}, {"name": "b", "type": "integer", "default": 40}]}`, "", "", nil},
		{"default of the wrong type", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", "args": [{"name": "b", "type": "integer", "default": "40"}]}`, "", "",
			[]string{`tools[0].args[0].default: "40" does not fit type "integer" (fix: give a default of the argument's type, e.g. 40)`}},
		{"required with a default", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", "args": [{"name": "b", "type": "string", "default": "x", "required": true}]}`, "", "",
			[]string{`tools[0].args[0].required: is true, but the argument has a default, which a call that leaves it out gets`}},
		{"typo in an argument", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", "args": [{"name": "b", "type": "string", "requried": false}]}`, "", "",
			[]string{`tools[0].args[0].requried: is not a known key, so it is ignored (fix: rename it to "required")`}},
		{"unknown key in a tool", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell", "timeout": 5}`, "", "",
			[]string{`tools[0].timeout: is not a known key, so it is ignored (fix: remove it; the keys here are name, description, executable, runtime, output, outputSchema, args)`}},
		{"typo in an MCP server", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell"}`, `{"srv": {"command": "node", "cwdd": "."}}`, "",
			[]string{`mcpServers.srv.cwdd: is not a known key, so it is ignored (fix: rename it to "cwd")`}},
		{"Gemini CLI's own keys stay", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell"}`, `{"srv": {"command": "node", "trust": true}}`, `"hooks": {}, "agents": []`, nil},
		{"typo at the top", `{"name": "t", "description": "d", "executable": "t.sh", "runtime": "shell"}`, "", `"excludTools": []`,
			[]string{`excludTools: is not a known key, so it is ignored (fix: rename it to "excludeTools")`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			manifest := `{"name": "x", "version": "1.0.0", "tools": [` + tc.tool + `]`
			if tc.mcp != "" {
				manifest += `, "mcpServers": ` + tc.mcp
			}
			if tc.top != "" {
				manifest += ", " + tc.top
			}
			manifest += "}"
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644)
			os.WriteFile(filepath.Join(dir, "t.sh"), []byte("true\n"), 0o755)
			ext, err := Load(dir)
			if ext == nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ext.Problems {
				got = append(got, p.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) && !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want %q", i, got[i], w)
				}
			}
		})
	}
}
