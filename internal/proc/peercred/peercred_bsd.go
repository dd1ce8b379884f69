//go:build darwin || freebsd

package peercred

import "golang.org/x/sys/unix"

// FD reads the credentials of the peer of the connected Unix socket fd
// (LOCAL_PEERCRED, which says no pid).
func FD(fd int) (Cred, error) {
	c, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Cred{UID: -1, PID: -1}, err
	}
	return Cred{UID: int(c.Uid), PID: -1}, nil
}
