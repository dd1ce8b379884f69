package netproxy

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ownLoopbackNet: every address of 127.0.0.0/8 is this machine's (the
// kernel's local route for the block), so the proxy can dial from
// permission.ProxySource.
const ownLoopbackNet = true

// bindNoPort lets the kernel choose the local port of a connection bound
// to an address only at connect (IP_BIND_ADDRESS_NO_PORT), so that every
// proxy of every run shares permission.ProxySource without running out of
// ports: a port chosen at bind would have to be unique whatever the
// destination.
func bindNoPort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}
