package netproxy

import (
	"errors"
	"net"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// The sandbox's resolver is how gemkit learns the host a tool tried to
// reach without its proxy. A client that ignores HTTP_PROXY (Node 20's
// fetch, a Go program's own dialer, a raw socket) first looks the host
// name up. Inside the tool's network namespace the only way out is the
// proxy, so the lookup would fail and the connection would never be made,
// leaving gemkit nothing to report. Instead the tool's /etc/resolv.conf
// names 127.0.0.1, where a UDP socket the sandbox child bound inside the
// namespace waits; gemkit answers every query on it with "no such name"
// (NXDOMAIN) and records the name as a refusal, as the proxy records a
// host it refuses. This was chosen over answering with the proxy's
// address so that the connection lands on the proxy: that would need a
// listener on every port the tool may try (or packet rewriting, which
// needs nftables in the namespace), while the name alone is what the
// person needs to allow a host (a bare name allows every port). The
// client fails at once with its own words for an unknown name (Node's
// "getaddrinfo ENOTFOUND host"), never waiting on a timeout.
//
// What it cannot tell: a name in the system's /etc/hosts (localhost),
// which is resolved from the file. A connection to an address literal
// makes no lookup; the watch of the tool's connect calls tells it
// (internal/sandbox, connect_linux.go).

// ResolverPort is the port of the sandbox's resolver inside a tool's
// network namespace: DNS's, the only one resolv.conf can name.
const ResolverPort = 53

// ResolvConf is the tool's /etc/resolv.conf when its lookups are
// recorded: the sandbox's resolver only, tried once, and no search
// domains, so that each name asked is the one the tool named.
const ResolvConf = "# gemkit sandbox: names are looked up by gemkit, which answers that none exists\n" +
	"# and reports the name; hosts allowed are reached through HTTP_PROXY.\n" +
	"nameserver 127.0.0.1\noptions attempts:1 timeout:2\n"

// LookupMethod is the Method of a Denial that is a name the tool looked
// up rather than a connection it asked the proxy for: it has no port.
const LookupMethod = "LOOKUP"

// Reasons of a refused lookup, for a host that is not allowed and for
// one that is (reached only through the proxy, which the client did not
// use).
const (
	LookupNotAllowed = "name looked up without the sandbox's proxy; host not allowed"
	LookupNoProxy    = "name of an allowed host looked up without the sandbox's proxy, which alone reaches it (HTTPS_PROXY, HTTP_PROXY; Node's fetch uses it from Node 22.21 with NODE_USE_ENV_PROXY=1)"
)

// maxQuery bounds a query read: a DNS question over UDP fits in 512
// bytes; EDNS allows more, which no question needs.
const maxQuery = 4096

// ServeResolver answers every DNS query on pc that no such name exists,
// recording each name asked as a refusal (Method LookupMethod) as the
// proxy records a host, until pc is closed. Malformed packets get no
// answer.
func (p *Proxy) ServeResolver(pc net.PacketConn) error {
	buf := make([]byte, maxQuery)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		answer, name, ok := nameError(buf[:n])
		if !ok {
			continue
		}
		if name != "" {
			reason := LookupNotAllowed
			if p.allowedName(name) {
				reason = LookupNoProxy
			}
			p.Record(LookupMethod, name, 0, reason)
		}
		_, _ = pc.WriteTo(answer, from)
	}
}

// StartResolver serves the resolver on pc (ServeResolver) until Close,
// which closes pc and waits for it to stop.
func (p *Proxy) StartResolver(pc net.PacketConn) {
	p.resolverConn = pc
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.ServeResolver(pc)
	}()
}

// nameError parses a query and builds its answer: the question echoed,
// "no such name", no records. name is the host asked for (lower case, no
// trailing dot), empty for a question that is not an address lookup.
func nameError(query []byte) (answer []byte, name string, ok bool) {
	var pr dnsmessage.Parser
	h, err := pr.Start(query)
	if err != nil || h.Response {
		return nil, "", false
	}
	q, err := pr.Question()
	if err != nil {
		return nil, "", false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired,
		RecursionAvailable: true, RCode: dnsmessage.RCodeNameError}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	if err := b.StartQuestions(); err != nil {
		return nil, "", false
	}
	if err := b.Question(q); err != nil {
		return nil, "", false
	}
	answer, err = b.Finish()
	if err != nil {
		return nil, "", false
	}
	if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA || q.Type == dnsmessage.TypeHTTPS {
		name = strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	}
	return answer, name, true
}

// allowedName reports whether some allowedHosts entry names host, on any
// port.
func (p *Proxy) allowedName(host string) bool {
	for _, r := range p.rules {
		port := r.Port
		switch {
		case port != 0:
		case r.Scheme == "https":
			port = 443
		case r.Scheme == "http":
			port = 80
		default:
			port = 1
		}
		if r.Matches(host, port) {
			return true
		}
	}
	return false
}
