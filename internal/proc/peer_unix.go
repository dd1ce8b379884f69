//go:build linux || darwin || freebsd

package proc

import (
	"net"

	"github.com/gemkit/gemkit/internal/proc/peercred"
)

// PeerUID is the uid of the process at the other end of conn, as the
// kernel recorded it when that process connected or listened: what a
// socket in a private folder is checked with before its peer is trusted
// (a language-server group's, a broker's). It is -1 where the system
// gives no socket credentials (peer_other.go).
func PeerUID(conn *net.UnixConn) (int, error) {
	c, err := Peer(conn)
	return c.UID, err
}

// Peer is the credentials of the process at the other end of conn
// (peercred.FD): its uid, and on Linux its pid when it connected or
// listened.
func Peer(conn *net.UnixConn) (peercred.Cred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return peercred.Cred{UID: -1, PID: -1}, err
	}
	c := peercred.Cred{UID: -1, PID: -1}
	var serr error
	if err := raw.Control(func(fd uintptr) { c, serr = peercred.FD(int(fd)) }); err != nil {
		return peercred.Cred{UID: -1, PID: -1}, err
	}
	return c, serr
}
