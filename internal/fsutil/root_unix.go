//go:build unix

package fsutil

import "syscall"

// openReadFlags keep a read from blocking on a FIFO (O_NONBLOCK) and from
// making a terminal the process's controlling one (O_NOCTTY); the file is
// refused afterwards unless it is regular, where neither flag matters.
const openReadFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
