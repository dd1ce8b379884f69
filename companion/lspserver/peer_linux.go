package lspserver

import "golang.org/x/sys/unix"

// fdPeerUID reads SO_PEERCRED: the credentials the peer had when it
// connected or listened.
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
