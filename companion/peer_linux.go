package companion

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/gemkit/gemkit/internal/proc"
)

// peerConnOf is the two ends of r's connection, for peerOf.
func peerConnOf(r *http.Request) peerConn {
	c := peerConn{remote: r.RemoteAddr}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		c.local = la.String()
	}
	return c
}

// peerOf finds the process at the other end of a loopback connection and
// its working folder, so that the status line can tell two CLIs of the
// same name apart. It looks the connection up as ss and lsof do: the
// peer's socket from the kernel (proc.TCPSocket, one exact sock_diag
// lookup), then the process that holds it
// (proc.SocketOwners, newest processes first: a CLI that has just
// connected is most often among the last started). Only processes of the
// same user can be seen, which is every CLI that could read the
// discovery file; 0 and "" when the peer is not found. It reads /proc,
// so callers run it off the request's path.
//
// A peer that is the stdio bridge (`gemkit ide bridge`, which a CLI starts
// when it cannot reach the port itself) stands for its parent, the CLI.
// The program is named from its command line (processAgent).
func peerOf(c peerConn) peerProcess {
	remote, err := netip.ParseAddrPort(c.remote)
	if err != nil || !remote.Addr().IsLoopback() {
		return peerProcess{}
	}
	local, err := netip.ParseAddrPort(c.local)
	if err != nil {
		return peerProcess{}
	}
	// The peer's end: its local end is this connection's remote one.
	sock, err := proc.TCPSocket(remote, local)
	if err != nil {
		return peerProcess{}
	}
	p := peerProcess{pid: proc.SocketOwners([]uint64{sock.Inode}, nil)[sock.Inode]}
	if p.pid == 0 {
		return peerProcess{}
	}
	if args, _ := proc.Cmdline(p.pid); isBridge(args) {
		if parent, _ := proc.Parent(p.pid); parent > 1 {
			p.pid, p.bridged = parent, true
		}
	}
	args, _ := proc.Cmdline(p.pid)
	p.agent, p.version = processAgent(args)
	p.dir, _ = proc.Cwd(p.pid)
	return p
}

// isBridge reports whether args are those of `gemkit ide bridge`: the
// subcommand right after the program, whatever the program's name.
func isBridge(args []string) bool {
	return len(args) >= 3 && args[1] == "ide" && args[2] == "bridge"
}
