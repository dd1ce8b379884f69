//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// protocolStdout gives the protocol the process's standard output alone:
// the descriptor moves to a new number that only the protocol writes, and
// descriptor 1 (with os.Stdout) becomes standard error, so that nothing
// else gemkit, a library or a child process prints can reach the client.
// restore puts things back.
func protocolStdout() (out *os.File, restore func(), err error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, nil, err
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	out = os.NewFile(uintptr(fd), "/dev/stdout")
	saved := os.Stdout
	os.Stdout = os.Stderr
	return out, func() {
		unix.Dup2(fd, 1)
		os.Stdout = saved
		out.Close()
	}, nil
}
