package companion

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
// socket's inode in /proc/net/tcp (or tcp6), then the process that holds
// it among /proc/*/fd. Only processes of the same user can be seen, which
// is every CLI that could read the discovery file; 0 and "" when the
// peer is not found. It reads all of /proc, so callers run it off the
// request's path.
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
	// The peer's socket has the remote port as its local port.
	inode := socketInode(remote.Port(), local.Port())
	if inode == "" {
		return peerProcess{}
	}
	p := peerProcess{pid: socketOwner(inode)}
	if p.pid == 0 {
		return peerProcess{}
	}
	if args := cmdline(p.pid); isBridge(args) {
		if parent := parentPID(p.pid); parent > 1 {
			p.pid, p.bridged = parent, true
		}
	}
	p.agent, p.version = processAgent(cmdline(p.pid))
	p.dir, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.pid))
	return p
}

// cmdline is a process's arguments, from /proc.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// isBridge reports whether args are those of `gemkit ide bridge`: the
// subcommand right after the program, whatever the program's name.
func isBridge(args []string) bool {
	return len(args) >= 3 && args[1] == "ide" && args[2] == "bridge"
}

// parentPID reads a process's parent from /proc/PID/stat, whose second
// field (the command's name) may hold spaces and parentheses.
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// socketInode returns the inode of the TCP socket whose local port is
// local and remote port remote, from /proc/net/tcp and tcp6.
func socketInode(local, remote uint16) string {
	want := fmt.Sprintf(":%04X", local)
	wantRemote := fmt.Sprintf(":%04X", remote)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !strings.HasSuffix(fields[1], want) || !strings.HasSuffix(fields[2], wantRemote) {
				continue
			}
			f.Close()
			return fields[9]
		}
		f.Close()
	}
	return ""
}

// socketOwner returns the pid of a process that holds socket inode. The
// newest processes are looked at first: a CLI that has just connected is
// most often among the last started, so the lookup ends after a few of
// them instead of reading every process's descriptors (the whole scan
// costs milliseconds of CPU, on a core the connect's answers need too).
func socketOwner(inode string) int {
	target := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		if pid, err := strconv.Atoi(p.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	slices.Reverse(pids)
	for _, pid := range pids {
		fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && link == target {
				return pid
			}
		}
	}
	return 0
}
