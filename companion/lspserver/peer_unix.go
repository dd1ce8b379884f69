//go:build linux || darwin || freebsd

package lspserver

import "net"

// peerUID is the uid of the process at the other end of conn, as the
// system's socket credentials give it (fdPeerUID).
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var serr error
	if err := raw.Control(func(fd uintptr) { uid, serr = fdPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, serr
}
