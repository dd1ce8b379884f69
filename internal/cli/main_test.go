package cli

import (
	"os"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestMain lets this test binary serve as its own sandbox child, as the
// gemkit binary does, so that commands run in-process through Run can
// start extension tools.
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(gemkittest.Main(m))
}
