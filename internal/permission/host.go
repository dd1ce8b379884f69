package permission

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Host is one parsed entry of permissions.network.allowedHosts.
//
// The plan writes hosts both as bare names ("api.example.com") and as
// origins ("https://linter-rules.example.com"); both are accepted. A
// leading "*." allows every subdomain (not the bare domain itself).
type Host struct {
	// Name is the lower-case host name or IP address, without brackets and
	// without the "*." of a wildcard.
	Name string
	// Wildcard is true for "*.example.com".
	Wildcard bool
	// Port is the port, or 0 when any port is allowed (a bare name) or
	// the scheme's default applies (see Scheme).
	Port int
	// Scheme is "http" or "https" when the entry was written as an origin,
	// else empty.
	Scheme string
}

// String writes the host in its canonical form: scheme://name:port for an
// origin (default port left out), name[:port] otherwise.
func (h Host) String() string {
	name := h.Name
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if h.Wildcard {
		name = "*." + name
	}
	if h.Port != 0 && !(h.Scheme == "https" && h.Port == 443) && !(h.Scheme == "http" && h.Port == 80) {
		name += ":" + strconv.Itoa(h.Port)
	}
	if h.Scheme != "" {
		return h.Scheme + "://" + name
	}
	return name
}

// Matches reports whether a connection to host:port is allowed by h.
func (h Host) Matches(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h.Wildcard {
		if !strings.HasSuffix(host, "."+h.Name) {
			return false
		}
	} else if host != h.Name {
		return false
	}
	switch {
	case h.Port != 0:
		return port == h.Port
	case h.Scheme == "https":
		return port == 443
	case h.Scheme == "http":
		return port == 80
	}
	return true
}

// ParseHost reads one allowedHosts entry. The error says what is wrong in
// words a manifest author can act on.
func ParseHost(s string) (Host, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Host{}, errors.New("is empty")
	}
	if s != orig {
		return Host{}, errors.New("has spaces around it")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return Host{}, errors.New("contains spaces")
	}
	var h Host
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil {
			return Host{}, fmt.Errorf("is not a valid origin: %v", err)
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme != "http" && scheme != "https" {
			return Host{}, fmt.Errorf("uses the scheme %q; only http and https origins (or bare host names) are allowed", u.Scheme)
		}
		if u.User != nil {
			return Host{}, errors.New("contains a user name or password")
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return Host{}, errors.New("has a path, query or fragment; give only the origin (scheme://host[:port])")
		}
		h.Scheme = scheme
		s = u.Host
	}
	if strings.ContainsAny(s, "/?#@") {
		return Host{}, errors.New("is not a host name (it contains / ? # or @)")
	}
	name, portText := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return Host{}, errors.New("has an unclosed [ in an IPv6 address")
		}
		name = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return Host{}, errors.New("has text after the IPv6 address")
			}
			portText = rest[1:]
		}
		if ip := net.ParseIP(name); ip == nil || ip.To4() != nil {
			return Host{}, fmt.Errorf("%q is not an IPv6 address", name)
		}
	} else if strings.Count(s, ":") == 1 {
		name, portText, _ = strings.Cut(s, ":")
	} else if strings.Count(s, ":") > 1 {
		if net.ParseIP(s) == nil {
			return Host{}, errors.New("has more than one ':'")
		}
		name = s
	}
	if portText != "" || strings.HasSuffix(s, ":") {
		p, err := strconv.Atoi(portText)
		if err != nil || p < 1 || p > 65535 {
			return Host{}, fmt.Errorf("has the port %q; a port is a number from 1 to 65535", portText)
		}
		h.Port = p
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if strings.HasPrefix(name, "*.") {
		h.Wildcard = true
		name = name[2:]
	}
	if strings.Contains(name, "*") {
		return Host{}, errors.New("has a '*' that is not a leading \"*.\" wildcard")
	}
	if ip := net.ParseIP(name); ip != nil {
		if h.Wildcard {
			return Host{}, errors.New("puts a wildcard in front of an IP address")
		}
		h.Name = ip.String()
		return h, nil
	}
	if err := checkHostName(name); err != nil {
		return Host{}, err
	}
	if h.Wildcard && !strings.Contains(name, ".") {
		return Host{}, errors.New("is a wildcard over a top-level domain; name at least example.com")
	}
	h.Name = name
	return h, nil
}

// checkHostName applies the DNS rules for host names: labels of letters,
// digits and hyphens, 1–63 long, not starting or ending with a hyphen.
func checkHostName(name string) error {
	if name == "" {
		return errors.New("has no host name")
	}
	if len(name) > 253 {
		return errors.New("is longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return errors.New("has an empty label (two dots in a row, or a leading dot)")
		}
		if len(label) > 63 {
			return fmt.Errorf("has the label %q, longer than 63 characters", label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("has the label %q, which starts or ends with '-'", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("contains %q, which is not allowed in a host name", r)
			}
		}
	}
	return nil
}

// Loopback reports whether h names this machine itself: "localhost" (or a
// name under it) or a loopback or unspecified address. Services that
// trust connections from this machine become reachable through it, which
// the consent text says in words.
func (h Host) Loopback() bool {
	if h.Name == "localhost" || strings.HasSuffix(h.Name, ".localhost") {
		return true
	}
	ip := net.ParseIP(h.Name)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
