package proc

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// TCPSockets asks the kernel (sock_diag over netlink) for this machine's
// TCP sockets that q selects, IPv4 and IPv6. Reading /proc/net/tcp would
// format and walk every socket of the machine as text: milliseconds where
// a netlink dump of the few wanted takes tens of microseconds, since the
// kernel filters by state and port itself (inet_diag_dump_icsk). The
// request and reply layouts are those of linux/inet_diag.h, which
// golang.org/x/sys does not define.
func TCPSockets(q Query) ([]Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	states := q.States
	if states == 0 {
		states = ^uint32(0)
	}
	var out []Socket
	buf := make([]byte, 32<<10)
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		// struct nlmsghdr (16 bytes), then struct inet_diag_req_v2 (56):
		// family, protocol, ext, pad, states, then inet_diag_sockid
		// (sport and dport big-endian first).
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
		req[16], req[17] = family, unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[20:], states)
		binary.BigEndian.PutUint16(req[24:], q.LocalPort)
		binary.BigEndian.PutUint16(req[26:], q.RemotePort)
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
				s, ok := parseDiag(m.Data)
				// The kernel filters by port already; this keeps the
				// answer right where it does not.
				if ok && states&(1<<s.State) != 0 && (q.LocalPort == 0 || s.Local.Port() == q.LocalPort) &&
					(q.RemotePort == 0 || s.Remote.Port() == q.RemotePort) {
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// TCPSocket asks the kernel (sock_diag, one exact lookup rather than a
// dump) for the TCP socket of this machine whose local end is local and
// remote end remote: an established connection's end, seen from its own
// side. A lookup costs microseconds, where a dump of the established
// sockets walks the kernel's whole table of them (milliseconds, however
// few there are). An IPv4 end is looked for as an IPv4 socket, then as
// an IPv6 socket's v4-mapped address (a dual-stack listener's).
func TCPSocket(local, remote netip.AddrPort) (Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Socket{}, err
	}
	defer unix.Close(fd)
	type try struct {
		family        uint8
		local, remote []byte
	}
	l, r := local.Addr().Unmap(), remote.Addr().Unmap()
	var tries []try
	if l.Is4() && r.Is4() {
		l4, r4 := l.As4(), r.As4()
		tries = append(tries, try{unix.AF_INET, l4[:], r4[:]})
	}
	l16, r16 := l.As16(), r.As16()
	tries = append(tries, try{unix.AF_INET6, l16[:], r16[:]})
	buf := make([]byte, 4096)
	for _, t := range tries {
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
		req[16], req[17] = t.family, unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[20:], ^uint32(0))
		binary.BigEndian.PutUint16(req[24:], local.Port())
		binary.BigEndian.PutUint16(req[26:], remote.Port())
		copy(req[28:44], t.local)
		copy(req[44:60], t.remote)
		// Interface 0, then the cookie INET_DIAG_NOCOOKIE (all ones):
		// any socket with these ends.
		binary.NativeEndian.PutUint64(req[64:], ^uint64(0))
		if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return Socket{}, err
		}
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return Socket{}, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return Socket{}, err
		}
		for _, m := range msgs {
			if m.Header.Type == syscall.NLMSG_ERROR {
				continue // ENOENT: not in this family
			}
			if s, ok := parseDiag(m.Data); ok {
				return s, nil
			}
		}
	}
	return Socket{}, ErrNoSocket
}

// parseDiag reads a struct inet_diag_msg: family, state, timer, retrans,
// then inet_diag_sockid (sport and dport big-endian, src and dst 16 bytes
// each, interface, cookie), expires, rqueue, wqueue, uid, inode.
func parseDiag(b []byte) (Socket, bool) {
	if len(b) < 72 {
		return Socket{}, false
	}
	s := Socket{State: b[1], UID: binary.NativeEndian.Uint32(b[64:68]), Inode: uint64(binary.NativeEndian.Uint32(b[68:72]))}
	sport, dport := binary.BigEndian.Uint16(b[4:6]), binary.BigEndian.Uint16(b[6:8])
	switch b[0] {
	case unix.AF_INET:
		s.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[8:12])), sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[24:28])), dport)
	case unix.AF_INET6:
		s.Local = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[24:40])).Unmap(), dport)
	default:
		return Socket{}, false
	}
	return s, true
}
