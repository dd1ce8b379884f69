//go:build linux || darwin || freebsd

package proc

import "net"

// PeerUID is the uid of the process at the other end of conn, as the
// kernel recorded it when that process connected or listened: what a
// socket in a private folder is checked with before its peer is trusted
// (a language-server group's, a broker's). It is -1 where the system
// gives no socket credentials (peer_other.go).
func PeerUID(conn *net.UnixConn) (int, error) {
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
