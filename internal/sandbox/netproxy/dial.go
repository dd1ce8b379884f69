package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/permission"
)

// Reaching an allowed host: the target a request names, checked in
// canonical form, resolved by the proxy (never by the tool), and dialled
// from an address of the proxy's own when it is this machine; and the
// refusals that only a lookup or a dial can find.

// splitTarget splits host[:port] and puts the host in the canonical form
// that is both checked and dialled: lower case, no trailing dot, no
// brackets.
func splitTarget(hostport string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	port := defPort
	if err != nil {
		if defPort == 0 {
			return "", 0, err
		}
		host = hostport
	} else {
		port, err = strconv.Atoi(ps)
		if err != nil || port < 1 || port > 65535 {
			return "", 0, fmt.Errorf("bad port %q", ps)
		}
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return "", 0, fmt.Errorf("no host in %q", hostport)
	}
	return host, port, nil
}

// dial resolves host with the proxy's resolver and connects to the first
// address that answers. Every connection to this machine (machine.has)
// comes from permission.ProxySource, whatever form of address the tool
// named; one that cannot is refused (sourceError).
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	var addrs []net.IPAddr
	m := thisMachine()
	if ip := net.ParseIP(host); ip != nil {
		// An IP literal passed the allowlist only because it is listed.
		addrs = []net.IPAddr{{IP: ip}}
	} else if host == "localhost" {
		// Listed as "localhost" (a local model or dev server): IPv4
		// loopback, never a DNS answer, and only for that entry. Not ::1:
		// no connection to it can come from permission.ProxySource.
		addrs = []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}
	} else {
		var err error
		addrs, err = p.resolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		if !p.AllowPrivate {
			// A private address (or this machine's) is reached by a name
			// only when it is listed too, on this port: a name alone
			// could be made to point at this machine's or this
			// network's services by whoever answers its lookup (DNS
			// rebinding), while a company mirror at 10.0.0.5 is allowed
			// by naming both. An address not listed stays refused,
			// whatever the name.
			kept := addrs[:0:0]
			var private net.IP
			for _, a := range addrs {
				switch {
				case !m.special(a.IP):
				case p.Allowed(a.IP.String(), port):
				default:
					if private == nil {
						private = a.IP
					}
					continue
				}
				kept = append(kept, a)
			}
			if len(kept) == 0 && private != nil {
				return nil, &privateError{host: host, ip: private, port: port}
			}
			addrs = kept
		}
	}
	return p.dialAddrs(ctx, host, addrs, port)
}

// dialAddrs connects to the first of addrs, host's, that answers on
// port: never to one of gemkit's own servers on this machine, and to
// this machine only from permission.ProxySource (dialerTo).
func (p *Proxy) dialAddrs(ctx context.Context, host string, addrs []net.IPAddr, port int) (net.Conn, error) {
	m := thisMachine()
	if p.OwnServer != nil {
		for _, a := range addrs {
			if m.has(a.IP) && p.OwnServer(port) {
				return nil, &ownServerError{port: port}
			}
		}
	}
	var last, refused error
	dialled := false
	for _, a := range addrs {
		to, d, err := dialerTo(a.IP, m)
		if err != nil {
			refused = err
			continue
		}
		dialled = true
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(to.String(), strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		if d.LocalAddr != nil && errors.Is(err, syscall.EADDRNOTAVAIL) {
			err = &sourceError{ip: a.IP, err: err}
		}
		last = err
	}
	switch {
	case !dialled && refused != nil:
		return nil, refused
	case last == nil:
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return nil, last
}

// dialerTo returns the address to connect to for ip and the dialer to
// connect with. A connection to this machine (m.has) connects from
// permission.ProxySource, an address of its own that gemkit's servers
// refuse, so that what comes through a sandbox's proxy cannot pass for a
// local client of theirs or of any other local service, whatever the tool
// knows (their token, a port the proxy did not recognise) and whatever
// form of this machine's address it named: the unspecified address is
// dialled as 127.0.0.1, an IPv4-mapped one as the IPv4 address it maps.
// An IPv6 address of this machine is refused: ProxySource is IPv4, and
// from ::1 or an interface's own IPv6 address a connection would look
// like any local client's.
func dialerTo(ip net.IP, m machine) (net.IP, net.Dialer, error) {
	var d net.Dialer
	if !m.has(ip) {
		return ip, d, nil
	}
	v4 := ip.To4()
	if v4 == nil {
		return nil, d, &sourceError{ip: ip}
	}
	if v4.IsUnspecified() {
		v4 = net.IPv4(127, 0, 0, 1).To4()
	}
	d.LocalAddr = &net.TCPAddr{IP: net.IP(permission.ProxySource.AsSlice())}
	d.Control = bindNoPort
	return v4, d, nil
}

// sourceError is a connection to this machine that the proxy cannot make
// from permission.ProxySource: one over IPv6, or one where the address
// cannot be bound (only 127.0.0.1 is configured on macOS's loopback).
// Made from any other source it would pass for a local client's.
type sourceError struct {
	ip  net.IP
	err error
}

func (e *sourceError) Error() string {
	s := fmt.Sprintf("%s is this machine, and the sandbox proxy reaches this machine only from its own address %s, which gemkit's servers refuse", e.ip, permission.ProxySource)
	if e.ip.To4() == nil {
		s += " and which is IPv4; list the service's IPv4 address (127.0.0.1) or localhost"
	}
	if e.err != nil {
		s += fmt.Sprintf(" (%v)", e.err)
	}
	return s
}

func (e *sourceError) Unwrap() error { return e.err }

// privateError is an allowed name that resolves only to loopback, private
// or link-local addresses: following it would let a tool reach this
// machine's or this network's own services by a name that a DNS answer
// controls (DNS rebinding).
type privateError struct {
	host string
	ip   net.IP
	port int
}

// PrivateReason begins the reason of a name refused for the private
// address its lookup gave (Denial.Addr).
const PrivateReason = "resolves to the private address"

func (e *privateError) Error() string {
	return fmt.Sprintf("%s %s %s (special-purpose, or this machine's own); the sandbox proxy reaches such an address by a name only when allowedHosts lists the address too (%s), beside the name: a name alone could be made to point at this machine's or this network's services", e.host, PrivateReason, e.ip, net.JoinHostPort(e.ip.String(), strconv.Itoa(e.port)))
}

// ownServerError is a connection to one of gemkit's own servers on this
// machine (the IDE companion, its Claude Code endpoint or `gemkit mcp
// --http`) or another IDE companion, whose tokens let a client write files
// and run tools.
type ownServerError struct{ port int }

func (e *ownServerError) Error() string {
	return fmt.Sprintf("port %d on this machine is one of gemkit's own servers (the IDE companion, its Claude Code endpoint or gemkit mcp --http) or another IDE companion's; no tool may reach them, whatever allowedHosts lists", e.port)
}

// Unreachable begins the reason of a connection to an allowed host that
// the network did not make: not a refusal of gemkit's, but reported as
// one, so that the person learns why a host they allowed is not reached
// (a server's own error says only "fetch failed").
const Unreachable = "an allowed host gemkit could not reach"

// unreachable says, for a dial error that is the network's, what it was
// in words; ok is false for another error.
func unreachable(err error) (why string, ok bool) {
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "its name does not resolve (no such host)", true
	case errors.As(err, &dnsErr):
		return "looking its name up failed (" + dnsErr.Err + ")", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "it refused the connection (nothing listens on that port)", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route leads to it from this machine", true
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "it did not answer within 30 s", true
	}
	return "", false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// refusal is the reason to report for a dial error that is a refusal
// rather than a failure, and the private address a name was refused
// for; an allowed host the network did not reach is reported too, its
// reason beginning with Unreachable.
func refusal(err error) (why, addr string, ok bool) {
	var pe *privateError
	var oe *ownServerError
	var se *sourceError
	switch {
	case errors.As(err, &se):
		return se.Error(), "", true
	case errors.As(err, &pe):
		return pe.Error(), pe.ip.String(), true
	case errors.As(err, &oe):
		return oe.Error(), "", true
	}
	// A failure through the person's own proxy is told as that
	// (denyUpstream), with the proxy it went through.
	if ue := (*UpstreamError)(nil); errors.As(err, &ue) {
		return "", "", false
	}
	if why, ok := unreachable(err); ok {
		return Unreachable + ": " + why, "", true
	}
	return "", "", false
}
