package cli

import (
	"os"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestMain lets this test binary serve as its own sandbox child, as the
// gemkit binary does, so that commands run in-process through Run can
// start extension tools; and as gemkit (asGemkitEnv).
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	// Run as gemkit itself, for the tests that need gemkit's processes
	// (a hook's warm server, which gemkit starts as itself).
	if os.Getenv(asGemkitEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(gemkittest.Main(m))
}

// asGemkitEnv set to 1 makes this test binary gemkit: Main with its
// arguments.
const asGemkitEnv = "GEMKIT_CLI_TEST_AS_GEMKIT"
