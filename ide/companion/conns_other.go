//go:build !unix

package companion

// openFileLimit is unknown here.
func openFileLimit() int { return 0 }
