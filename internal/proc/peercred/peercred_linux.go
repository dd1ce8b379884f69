package peercred

import "syscall"

// FD reads the credentials of the peer of the connected Unix socket fd
// (SO_PEERCRED).
func FD(fd int) (Cred, error) {
	c, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return Cred{UID: -1, PID: -1}, err
	}
	return Cred{UID: int(c.Uid), PID: int(c.Pid)}, nil
}
