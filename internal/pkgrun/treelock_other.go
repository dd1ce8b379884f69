//go:build !unix

package pkgrun

import "os"

// Elsewhere the trees are not installed at all (the sandbox is Linux's):
// there is nothing to lock.
func flock(*os.File) error { return nil }

func funlock(*os.File) {}
