//go:build !unix

package discovery

import (
	"io/fs"
	"os"
)

// fileOwner is unknown off Unix; the real client skips the check there
// (verifyAndReadFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func fileOwner(fs.FileInfo) int { return -1 }

// pidAlive assumes every process is alive off Unix, as the real client does
// on Windows to avoid the cost of asking (isPidAlive in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func pidAlive(int) bool { return true }

// openNonBlocking opens path for reading; off Unix there are no named
// pipes among ordinary paths.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
