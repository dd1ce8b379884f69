//go:build !unix

package cli

import "io/fs"

// fileUID is unknown where files have no Unix owner.
func fileUID(fs.FileInfo) int { return -1 }
