package mcpserver

import (
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/disclosure"
)

// TestReservedCoversServed: every name gemkit serves itself (read_doc,
// the code-intelligence tools, its resource schemes) is in the one table
// of reserved names, so that a tool gemkit adds cannot be taken by an
// extension's.
func TestReservedCoversServed(t *testing.T) {
	names := []string{disclosure.ReadDocTool, DocURI("x", "y"), ServerScheme + "://x/y/z"}
	for _, d := range (*codeintel.Tools)(nil).Decls() {
		names = append(names, d.Name)
	}
	for _, n := range names {
		if _, ok := disclosure.ReservedBy(n); !ok {
			t.Errorf("gemkit serves %s, which disclosure's table of reserved names does not hold", n)
		}
	}
}
