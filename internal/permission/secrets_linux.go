package permission

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tcpListen is TCP_LISTEN of the kernel's TCP states (include/net/tcp_states.h).
const tcpListen = 10

// listener is one listening TCP socket as the kernel reports it.
type listener struct {
	addr  netip.Addr
	port  int
	uid   uint32
	inode uint64
}

// writers looks at the listening sockets and, for those of this user on
// loopback or on every address whose process it has not seen yet, finds
// the process (its descriptors in /proc) and reads its environment.
func (l *Locator) writers() []Env {
	socks, err := listeners()
	if err != nil {
		return nil
	}
	uid := uint32(os.Geteuid())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byInode == nil {
		l.byInode = map[uint64]*Env{}
	}
	live := make(map[uint64]bool, len(socks))
	var unknown []uint64
	for _, s := range socks {
		if s.uid != uid || !(s.addr.IsLoopback() || s.addr.IsUnspecified()) {
			continue
		}
		live[s.inode] = true
		if _, ok := l.byInode[s.inode]; !ok {
			unknown = append(unknown, s.inode)
		}
	}
	for ino := range l.byInode {
		if !live[ino] {
			delete(l.byInode, ino)
		}
	}
	if len(unknown) > 0 {
		found := owners(unknown)
		for _, ino := range unknown {
			l.byInode[ino] = found[ino]
		}
	}
	var out []Env
	seen := map[*Env]bool{}
	for _, e := range l.byInode {
		if e != nil && !seen[e] {
			seen[e] = true
			out = append(out, *e)
		}
	}
	return out
}

// listeners asks the kernel (sock_diag over netlink) for the TCP sockets
// in the listening state, IPv4 and IPv6. Reading /proc/net/tcp would walk
// every socket of the machine, established and closing ones included:
// milliseconds where a netlink dump of the listening ones takes tens of
// microseconds. The request and reply layouts are those of
// linux/inet_diag.h, which golang.org/x/sys does not define.
func listeners() ([]listener, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []listener
	buf := make([]byte, 32<<10)
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		// struct nlmsghdr (16 bytes), then struct inet_diag_req_v2 (56):
		// family, protocol, ext, pad, states, then inet_diag_sockid.
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
		req[16], req[17] = family, unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[20:], 1<<tcpListen)
		if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return nil, err
		}
	recv:
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return nil, err
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case syscall.NLMSG_DONE:
					break recv
				case syscall.NLMSG_ERROR:
					return nil, errors.New("sock_diag: the kernel refused the request")
				}
				if s, ok := parseDiag(m.Data); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// parseDiag reads a struct inet_diag_msg: family, state, timer, retrans,
// then inet_diag_sockid (sport and dport big-endian, src and dst 16 bytes
// each, interface, cookie), expires, rqueue, wqueue, uid, inode.
func parseDiag(b []byte) (listener, bool) {
	if len(b) < 72 {
		return listener{}, false
	}
	s := listener{port: int(binary.BigEndian.Uint16(b[4:6])), uid: binary.NativeEndian.Uint32(b[64:68]),
		inode: uint64(binary.NativeEndian.Uint32(b[68:72]))}
	switch b[0] {
	case unix.AF_INET:
		s.addr = netip.AddrFrom4([4]byte(b[8:12]))
	case unix.AF_INET6:
		s.addr = netip.AddrFrom16([16]byte(b[8:24])).Unmap()
	default:
		return listener{}, false
	}
	return s, true
}

// owners finds the processes of this user that hold the sockets inodes
// and reads their environments; a socket whose process cannot be seen
// (another PID namespace, gone meanwhile) has none.
func owners(inodes []uint64) map[uint64]*Env {
	want := make(map[string]uint64, len(inodes))
	for _, ino := range inodes {
		want["socket:["+strconv.FormatUint(ino, 10)+"]"] = ino
	}
	found := map[uint64]*Env{}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	uid := uint32(os.Geteuid())
	for _, p := range procs {
		if len(found) == len(want) {
			break
		}
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := "/proc/" + p.Name()
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || st.Uid != uid {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		var env *Env
		for _, fd := range fds {
			target, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			ino, ok := want[target]
			if !ok {
				continue
			}
			if env == nil {
				e, err := processEnv(dir)
				if err != nil {
					break
				}
				env = &e
			}
			found[ino] = env
		}
	}
	return found
}

// processEnv reads a process's environment as it started, and its
// working folder, from which it takes a relative home variable.
func processEnv(dir string) (Env, error) {
	f, err := os.Open(dir + "/environ")
	if err != nil {
		return Env{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return Env{}, err
	}
	e := envOfList(strings.Split(string(b), "\x00"))
	if cwd, err := os.Readlink(dir + "/cwd"); err == nil && filepath.IsAbs(cwd) {
		e.Dir = cwd
	}
	return e, nil
}
