package sandbox

import (
	"net"
	"net/netip"
)

// specialPrefixes are the special-purpose address blocks (RFC 6890 and
// its updates) that are not the public internet: this host, private and
// shared networks, documentation and benchmarking ranges, reserved and
// multicast space, and their IPv6 counterparts. A proxy that followed a
// DNS answer into them would let a tool reach this machine's or its
// network's own services.
var specialPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// isPrivate reports whether ip is not a public internet address: in a
// special-purpose block (an IPv4-mapped IPv6 address is judged as the
// IPv4 address it maps).
func isPrivate(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	a = a.Unmap()
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// localAddrs returns the addresses bound to this machine's interfaces:
// a public address of the machine itself reaches its own services as
// surely as loopback does.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// isLocal reports whether ip is one of local (localAddrs).
func isLocal(ip net.IP, local map[netip.Addr]bool) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && local[a.Unmap()]
}
