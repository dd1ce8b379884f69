package codeintel

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestToolsDocumented: docs/code-intel.md's table of the tools (under
// "## The tools") lists the tools questions declares, in their order, so
// that a new question is documented where the other pages point.
func TestToolsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/code-intel.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The tools\n")
	if !ok {
		t.Fatal(`docs/code-intel.md has no section "## The tools"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(code_[a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var declared []string
	for _, q := range questions() {
		declared = append(declared, q.Name)
	}
	if !slices.Equal(documented, declared) {
		t.Errorf("docs/code-intel.md's table of the tools lists %v; the tools are %v", documented, declared)
	}
	for _, name := range declared {
		if !strings.Contains(Instructions, name) {
			t.Errorf("Instructions do not name %s: %s", name, Instructions)
		}
	}
}
