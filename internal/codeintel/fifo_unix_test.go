//go:build unix

package codeintel

import "syscall"

// mkfifo makes a named pipe at path, where the system has them.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
