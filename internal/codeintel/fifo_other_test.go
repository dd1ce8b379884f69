//go:build !unix

package codeintel

import "errors"

// mkfifo makes a named pipe at path, where the system has them.
func mkfifo(string) error { return errors.ErrUnsupported }
