//go:build !linux

package netproxy

import "syscall"

// ownLoopbackNet: only 127.0.0.1 is configured on loopback (macOS), so
// the proxy dials loopback from it as it is.
const ownLoopbackNet = false

// bindNoPort does nothing where IP_BIND_ADDRESS_NO_PORT does not exist.
func bindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
