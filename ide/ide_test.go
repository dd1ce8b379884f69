package ide_test

import (
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// TestMessageBoundFitsABody holds internal/jsonrpc's default message bound,
// written out there so that the package depends on no protocol above it,
// to what it is for: a diff's content at the companion's body limit, with
// room for escaping.
func TestMessageBoundFitsABody(t *testing.T) {
	if got, want := jsonrpc.DefaultMaxMessage, 4*ide.MaxRequestBody; got != want {
		t.Fatalf("jsonrpc.DefaultMaxMessage = %d, want 4 × ide.MaxRequestBody = %d", got, want)
	}
}
