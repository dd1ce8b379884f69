package netproxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The record of refusals: every connection the proxy or its resolver
// refused, and what the sandbox refused beside them (Proxy.Record,
// Proxy.RecordPath), kept once per distinct refusal with a count, bounded
// in number and in the length of what the tool chose, and reported as
// each first happens.

// Denial is one refusal: a connection the proxy refused, a name its
// resolver answered, or what the sandbox refused beside them and
// recorded here (Proxy.Record, Proxy.RecordPath), so that a run's
// refusals are one list.
type Denial struct {
	Host string `json:"host"`
	// Path is what a refusal of a path (a write: sandbox.WriteMethod)
	// named; such a refusal has no host or port.
	Path   string    `json:"path,omitempty"`
	Port   int       `json:"port"`
	Method string    `json:"method"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Count is how many refusals alike (method, host, port, reason)
	// this one stands for; the first one's time is At.
	Count int `json:"count"`
	// Addr is, for an allowed name refused for the private address its
	// lookup gave (PrivateReason), that address: listing it too allows
	// it.
	Addr string `json:"addr,omitempty"`
}

func (d Denial) String() string {
	s := fmt.Sprintf("%s %s:%d denied: %s", d.Method, d.Host, d.Port, d.Reason)
	if d.Path != "" {
		s = fmt.Sprintf("%s %s denied: %s", d.Method, d.Path, d.Reason)
	}
	if d.Count > 1 {
		s += fmt.Sprintf(" (%d times)", d.Count)
	}
	return s
}

// NotAllowed is the reason of a connection refused because its host is
// not in the allowed hosts: the one refusal that allowing the host ends.
const NotAllowed = "host not in network.allowedHosts"

// Bounds of what a tool can make the proxy keep or print: a request's
// line and headers, a host name in a denial, the number of distinct
// denials kept and reported.
const (
	maxRequestHeaderBytes = 16 << 10
	maxDenialHost         = 255
	maxDenialPath         = 4096
	maxDenials            = 64
)

// denialKey identifies refusals alike.
type denialKey struct {
	method, host, path, reason string
	port                       int
}

// cut bounds a string the tool chose before gemkit keeps or prints it.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
}

// Denied returns the connections refused so far: one Denial per distinct
// refusal (with its Count), at most maxDenials of them.
func (p *Proxy) Denied() []Denial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Denial(nil), p.denied...)
}

// Dropped is the number of refusals not in Denied: they came after
// maxDenials distinct ones.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *Proxy) deny(w http.ResponseWriter, method, host string, port int, reason string) {
	p.denyAddr(w, method, host, port, reason, "")
}

// denyAddr is deny of a name refused for the private address addr its
// lookup gave.
func (p *Proxy) denyAddr(w http.ResponseWriter, method, host string, port int, reason, addr string) {
	d := p.recordAddr(method, host, port, reason, addr)
	status := http.StatusForbidden
	if strings.HasPrefix(reason, Unreachable) {
		// Not gemkit's refusal: the network's failure, kept with them.
		status = http.StatusBadGateway
	}
	http.Error(w, "gemkit sandbox: "+d.String(), status)
}

// denyUpstream records a connection the person's proxy refused or
// that could not be made through it, and answers 502: the gateway
// beyond the sandbox's proxy failed, not its rules.
func (p *Proxy) denyUpstream(w http.ResponseWriter, method, host string, port int, e *UpstreamError) {
	d := p.recordAddr(method, host, port, e.Error(), "")
	http.Error(w, "gemkit sandbox: "+d.String(), http.StatusBadGateway)
}

// Record keeps a refusal of a connection, counted with those alike, and
// reports the first of each distinct one. It returns the refusal as
// kept. The proxy and its resolver record their own; the sandbox records
// through it what it refuses beside them (a connection made without the
// proxy, a listen, a Unix-domain socket), so that a run's refusals are
// one list, bounded once.
func (p *Proxy) Record(method, host string, port int, reason string) Denial {
	return p.recordAddr(method, host, port, reason, "")
}

func (p *Proxy) recordAddr(method, host string, port int, reason, addr string) Denial {
	return p.recordDenial(Denial{Host: cut(host, maxDenialHost), Port: port, Method: cut(method, 32), Reason: cut(reason, 512), At: time.Now(), Count: 1, Addr: addr})
}

// RecordPath records a refusal that names a path rather than a host (a
// write the sandbox refused, whose Method says so), in the same list as
// the connections refused.
func (p *Proxy) RecordPath(method, path, reason string) Denial {
	return p.recordDenial(Denial{Path: cut(path, maxDenialPath), Method: cut(method, 32), Reason: cut(reason, 512), At: time.Now(), Count: 1})
}

// recordDenial is record of d, a connection or a write.
func (p *Proxy) recordDenial(d Denial) Denial {
	k := denialKey{d.Method, d.Host, d.Path, d.Reason, d.Port}
	p.mu.Lock()
	if p.index == nil {
		p.index = map[denialKey]int{}
	}
	i, seen := p.index[k]
	report := false
	switch {
	case seen:
		p.denied[i].Count++
	case len(p.denied) < maxDenials:
		p.index[k] = len(p.denied)
		p.denied = append(p.denied, d)
		report = true
	default:
		p.dropped++
	}
	p.mu.Unlock()
	if !report {
		return d
	}
	// Reported once per distinct refusal: to the caller when it
	// listens, else in the log.
	what, args := "sandbox proxy denied a connection", []any{"method", d.Method, "host", d.Host, "port", d.Port, "reason", d.Reason}
	if d.Path != "" {
		what, args = "sandbox refused a write", []any{"path", d.Path, "reason", d.Reason}
	}
	if p.onDeny != nil {
		p.log.Debug(what, args...)
		p.onDeny(d)
	} else {
		p.log.Warn(what, args...)
	}
	return d
}
