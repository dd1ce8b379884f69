package lspbroker

import (
	"fmt"
	"net"
	"os"
)

// sameUser checks that the process at the other end of a connection runs
// as this user: a broker answers with the text of the workspace's files,
// and a client trusts its answers.
func sameUser(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	uid := -1
	var serr error
	if err := raw.Control(func(fd uintptr) { uid, serr = fdPeerUID(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("read the peer's credentials: %w", serr)
	}
	if me := os.Getuid(); uid >= 0 && me >= 0 && uid != me {
		return fmt.Errorf("the peer runs as uid %d, not as this user (uid %d)", uid, me)
	}
	return nil
}
