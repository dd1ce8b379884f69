package netproxy

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

// localAddrs returns the addresses bound to this machine's interfaces,
// read at the time of the call: a public address of the machine itself
// reaches its own services as surely as loopback does, and an address
// added since the last dial counts at once. ok is false when the kernel
// would not list them.
func localAddrs() (out map[netip.Addr]bool, ok bool) {
	out = map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out, false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out, true
}

// machine is what the proxy knows of this machine's addresses when it
// dials: its interfaces' addresses, or, when they could not be listed,
// that every special-purpose address may be one of them.
type machine struct {
	local map[netip.Addr]bool
	known bool
}

// thisMachine reads this machine's addresses now.
func thisMachine() machine {
	local, ok := localAddrs()
	return machine{local: local, known: ok}
}

// has reports whether a connection to ip reaches this machine: the
// unspecified address (0.0.0.0 or ::, which the kernel connects to
// loopback), every loopback form (127.0.0.0/8, ::1, and both as
// IPv4-mapped IPv6 addresses) and every address of an interface. When the
// interfaces could not be listed, every special-purpose address counts,
// so that an unknown one is marked or refused rather than let through.
func (m machine) has(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified(), a.IsLoopback(), m.local[a]:
		return true
	case !m.known:
		return isPrivate(ip)
	}
	return false
}

// Special reports whether a connection to ip would reach this machine,
// or a network's own services rather than the public internet: a
// special-purpose address or one of this machine's interfaces. It is the
// rule by which the sandbox's proxy refuses an address unless the host
// is allowed by name, shared with gemkit's own connections to an
// extension's remote MCP server (internal/extmcp), which gemkit makes
// outside any sandbox.
func Special(ip net.IP) bool { return thisMachine().special(ip) }

// special is Special with m as this machine's addresses.
func (m machine) special(ip net.IP) bool { return isPrivate(ip) || m.has(ip) }

// ThisMachine reports whether a connection to ip reaches this machine
// itself (loopback, the unspecified address, an interface's address).
func ThisMachine(ip net.IP) bool { return thisMachine().has(ip) }
