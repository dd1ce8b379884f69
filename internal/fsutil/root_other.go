//go:build !unix

package fsutil

// openReadFlags adds nothing where opens of special files do not block.
const openReadFlags = 0
