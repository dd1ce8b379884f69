//go:build !unix

package httpguard

// openFileLimit is unknown here.
func openFileLimit() int { return 0 }
