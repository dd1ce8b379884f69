// Command gemkit is the Gemini CLI IDE companion, its client, and the
// extension manager, in one binary. Everything it does lives in packages;
// main only hands over to the command tree.
//
// A tool's sandbox is set up by a re-executed copy of this binary: package
// internal/sandbox/child, linked through the extension commands, takes that
// copy over while the program initializes, before main runs.
package main

import (
	"os"

	"github.com/gemkit/gemkit/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
