package proc

import (
	"fmt"
	"net"
	"os"
)

// SameUser checks that the process at the other end of conn runs as
// this user, whatever the socket's folder lets others do: a language
// server group and a broker answer with the text of the workspace's
// files, and their clients trust the answers. Where the system gives no
// socket credentials the socket's private folder is the only guard.
func SameUser(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a Unix socket connection")
	}
	uid, err := PeerUID(uc)
	if err != nil {
		return fmt.Errorf("read the peer's credentials: %w", err)
	}
	if me := os.Getuid(); uid >= 0 && me >= 0 && uid != me {
		return fmt.Errorf("the peer runs as uid %d, not as this user (uid %d)", uid, me)
	}
	return nil
}
