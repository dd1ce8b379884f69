// Command gemkit is the Gemini CLI IDE companion, its client, and the
// extension manager, in one binary. Everything it does lives in packages;
// main only hands over to the command tree.
package main

import (
	"os"

	"github.com/gemkit/gemkit/internal/cli"
	"github.com/gemkit/gemkit/internal/sandbox"
)

func main() {
	// A tool's sandbox is set up by a re-executed copy of this binary.
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(cli.Main(os.Args[1:]))
}
