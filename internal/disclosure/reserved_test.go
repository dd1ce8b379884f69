package disclosure

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestReservedBy: gemkit's names, as a client may fold them, are
// reserved; an extension's own that only looks alike is not.
func TestReservedBy(t *testing.T) {
	for name, want := range map[string]bool{
		"read_doc": true, "Read-Doc": true, "code_definition": true, "code_anything_later": true, "CODE_hover": true,
		"gemkit-doc://demo/guide": true, "GEMKIT-MCP://a/b/c": true,
		"code-review_run": false, "read_docs": false, "mycode_definition": false, "code": false, "demo://x": false,
	} {
		if _, got := ReservedBy(name); got != want {
			t.Errorf("ReservedBy(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSetRefusesReserved: a manifest tool whose exposed name is gemkit's
// own is left out of the Set, with words naming both, rather than hashed
// into another name or served beside gemkit's.
func TestSetRefusesReserved(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeExt(t, home, `{"name": "code", "version": "1.0.0",
	 "tools": [{"name": "definition", "description": "x", "executable": "tools/x.sh", "runtime": "shell"}]}`,
		map[string]string{"tools/x.sh": "echo x\n"})
	writeExt(t, home, `{"name": "read", "version": "1.0.0",
	 "tools": [{"name": "doc", "description": "x", "executable": "tools/x.sh", "runtime": "shell"},
	           {"name": "docs", "description": "x", "executable": "tools/x.sh", "runtime": "shell"}]}`,
		map[string]string{"tools/x.sh": "echo x\n"})
	s, err := Load(extension.OpenStore(home).WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tools()) != 1 || s.Tools()[0].Name != "read_docs" {
		t.Errorf("tools %+v, want read_docs alone", s.Tools())
	}
	var words []string
	for _, r := range s.Refused() {
		words = append(words, r.String())
	}
	got := strings.Join(words, "\n")
	for _, want := range []string{
		"extension code's tool definition would be served as code_definition, which is a name of gemkit's code intelligence",
		"extension read's tool doc would be served as read_doc, which is a name of gemkit's read_doc",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusals do not say %q:\n%s", want, got)
		}
	}
}
