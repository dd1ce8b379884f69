//go:build !unix

package mcpclient

import (
	"errors"
	"io"
)

// nonBlocking is false: only unix descriptors are written without
// blocking, and send writes the rest in a goroutine of its own.
func nonBlocking(io.Writer) bool { return false }

func tryWrite(io.Writer, []byte) (int, error, bool) {
	return 0, errors.New("mcpclient: no non-blocking write here"), false
}
