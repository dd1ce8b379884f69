package lspbroker

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrRunning is Listen's error when a broker already listens on the
// socket.
var ErrRunning = errors.New("a code intelligence broker already serves this workspace")

// Listen listens on a broker's socket (mode 0600, removed when the
// listener closes). A socket left by a broker that died is replaced.
func Listen(path string) (*net.UnixListener, error) {
	if nc, err := dial(path); err == nil {
		nc.Close()
		return nil, ErrRunning
	}
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	// chmod follows a link: the name is first seen to be the socket.
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		ln.Close()
		return nil, fmt.Errorf("%s changed as the broker started listening on it: something other than gemkit uses gemkit's folder", path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
