package httpguard

import (
	"net"

	"golang.org/x/sys/unix"
)

// unackedBytes is how many bytes of c's send queue its peer has not
// acknowledged (SIOCOUTQ, tcp(7)): written but not received, or not yet
// sent. It still answers after a reset, with what was never acknowledged.
func unackedBytes(c *net.TCPConn) (int64, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ioErr error
	if err := rc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return int64(n), true
}
