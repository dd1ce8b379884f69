package pkgrun

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// How the person's machine reaches and trusts the registries, which the
// install honours as their own npx would: the certificates node trusts
// beside its own (NODE_EXTRA_CA_CERTS; npm's cafile, ca and strict-ssl
// are kept settings, npmrc.go), and the proxy npm would go through. The
// proxy is not npm's to reach in the sandbox (its only way out is the
// sandbox's proxy, which HTTPS_PROXY names there): the sandbox's proxy
// reaches the registry through it (netproxy's Upstream), asking it for
// the registries alone. None of these settings reaches the server that
// runs from the tree: they are the install's, in its configuration's
// folder, which is removed after it.

// proxyKeys are npm's proxy settings: read from the person's
// configuration, never written into the install's (npm there reaches
// the sandbox's proxy only).
var proxyKeys = []string{"proxy", "https-proxy", "noproxy"}

// extraCAName is the copy of NODE_EXTRA_CA_CERTS's file in the
// install's configuration folder.
const extraCAName = "node-extra-ca-certs.pem"

// readExtraCA reads the file NODE_EXTRA_CA_CERTS names, which node adds
// to the authorities it trusts (node's doc, "NODE_EXTRA_CA_CERTS"). It
// must be an absolute path (node would read a relative one from the
// folder it runs in: the workspace, which a tool may write) to a
// regular file, bounded; one that cannot be read fails the install in
// words rather than leaving the registry's certificate untrusted.
func (c *Config) readExtraCA(env map[string]string) error {
	p, ok := env["NODE_EXTRA_CA_CERTS"]
	if !ok || p == "" {
		return nil
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("NODE_EXTRA_CA_CERTS %q is not an absolute path: the install reads the certificates node trusts from an absolute path only", p)
	}
	data, err := readRegular(p, maxCertFile)
	if err != nil {
		return fmt.Errorf("NODE_EXTRA_CA_CERTS names %s, which cannot be read (%v): fix it or unset it", p, err)
	}
	c.extraCA, c.extraCAData = p, data
	return nil
}

// proxyEnv are the proxy variables npm reads, as it reads them
// (@npmcli/agent lib/proxy.js, PROXY_ENV): https_proxy, http_proxy,
// proxy and no_proxy in any case, the later in the environment winning;
// with the name each was read as.
func proxyEnv(environ []string) map[string][2]string {
	out := map[string][2]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch l := strings.ToLower(k); l {
		case "https_proxy", "http_proxy", "proxy", "no_proxy":
			out[l] = [2]string{v, k}
		}
	}
	return out
}

// proxyFor is the proxy npm would reach the registry u through, and the
// setting it comes from; nil for none. npm's rule: npm-registry-fetch
// (lib/index.js) hands its agent `opts.httpsProxy || opts.proxy` (the
// https-proxy and proxy settings, for http and https registries alike);
// without either, @npmcli/agent (lib/proxy.js, getProxy) takes
// https_proxy for an https URL, and https_proxy, http_proxy or proxy for
// an http one; the noproxy setting, else no_proxy, then names the hosts
// reached directly (isNoProxy).
func (c Config) proxyFor(u *url.URL) (*url.URL, string, error) {
	setting := func(k string) (string, string) {
		v := c.proxies[k]
		if v == "" || v == "false" || v == "null" {
			return "", ""
		}
		return v, k + " in " + c.from[k]
	}
	proxy, from := setting("https-proxy")
	if proxy == "" {
		proxy, from = setting("proxy")
	}
	if proxy == "" {
		names := []string{"https_proxy"}
		if u.Scheme != "https" {
			names = append(names, "http_proxy", "proxy")
		}
		for _, n := range names {
			if e := c.proxyEnv[n]; e[0] != "" {
				proxy, from = e[0], "$"+e[1]
				break
			}
		}
	}
	no := c.proxies["noproxy"]
	if no == "" {
		no = c.proxyEnv["no_proxy"][0]
	}
	if proxy == "" || noProxy(u, no) {
		return nil, "", nil
	}
	p, err := url.Parse(proxy)
	switch {
	case err != nil || p.Host == "" || p.Scheme == "":
		return nil, "", fmt.Errorf("npm configuration: the proxy %q (%s) is not a URL; npm would fail the same way", redactRaw(proxy), from)
	case p.Scheme != "http":
		return nil, "", fmt.Errorf("npm configuration: the registry %s is reached through the proxy %s (%s), a %s:// proxy; gemkit's install reaches a registry through an http:// proxy only", redact(u.String()), netproxy.Redacted(p), from, p.Scheme)
	}
	return p, from, nil
}

// redactRaw is a proxy setting that is not a URL, its credentials (what
// comes before an @) left out.
func redactRaw(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

// noProxy is @npmcli/agent's isNoProxy: the list is split at commas;
// an entry matches a host whose last dot-separated labels are the
// entry's (example.com and .example.com match registry.example.com and
// example.com); ports are not read apart, so "host:8080" matches no
// host.
func noProxy(u *url.URL, list string) bool {
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // the WHATWG URL's hostname keeps them
	}
	hs := strings.Split(host, ".")
	for _, e := range strings.Split(list, ",") {
		var ns []string
		for _, s := range strings.Split(strings.TrimSpace(e), ".") {
			if s != "" {
				ns = append(ns, s)
			}
		}
		if len(ns) == 0 || len(ns) > len(hs) {
			continue
		}
		match := true
		for i := 1; i <= len(ns); i++ {
			if hs[len(hs)-i] != ns[len(ns)-i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// route is how the install reaches its registries: the proxy of each
// registry's host that has one (host:port, lower case), and words for
// each proxy, with where it was set.
type route struct {
	upstream map[string]*url.URL
	words    []string
}

// routes works out the proxy of each registry of c.
func (c Config) routes() (route, error) {
	r := route{upstream: map[string]*url.URL{}}
	regs := []string{c.Registry}
	for _, s := range sortedKeys(c.Scopes) {
		regs = append(regs, c.Scopes[s])
	}
	said := map[string]bool{}
	for _, reg := range regs {
		u, err := url.Parse(reg)
		if err != nil {
			continue
		}
		p, from, err := c.proxyFor(u)
		if err != nil {
			return route{}, err
		}
		if p == nil {
			continue
		}
		r.upstream[strings.ToLower(hostPort(u))] = p
		w := fmt.Sprintf("through your proxy %s (%s)", netproxy.Redacted(p), from)
		if !said[w] {
			said[w] = true
			r.words = append(r.words, w)
		}
	}
	return r, nil
}

// Upstream is the proxy the sandbox's proxy reaches host:port through,
// nil for none (sandbox.Policy.Upstream).
func (r route) Upstream(host string, port int) *url.URL {
	return r.upstream[strings.ToLower(net.JoinHostPort(host, fmt.Sprint(port)))]
}

// hostPort is u's host and port, the scheme's port when it names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// trustWords say how the install trusts the registries beside what
// node trusts by itself: each certificate setting of the person's it
// uses, with where it was read. npm hands node the certificates of
// cafile or ca as its only authorities (the cafile setting's flatten in
// @npmcli/config's definitions, and node's tls ca option), so that with
// either, neither node's own nor NODE_EXTRA_CA_CERTS's are trusted: not
// by the person's npx, and not by the install.
func (c Config) trustWords() []string {
	var out []string
	replaced := false
	for _, k := range []string{"cafile", "ca", "ca[]"} {
		replaced = replaced || c.settings[k] != ""
	}
	only := ""
	if replaced {
		only = " only"
	}
	for _, k := range sortedKeys(c.settings) {
		v := c.settings[k]
		name := k
		if i := strings.LastIndex(k, ":"); i >= 0 && strings.HasPrefix(k, "//") {
			name = k[i+1:] + " for " + k[:i]
		}
		switch base := k[strings.LastIndex(k, ":")+1:]; {
		case base == "cafile" && v != "":
			out = append(out, fmt.Sprintf("trusting%s the certificates in %s (%s in %s)", only, v, name, c.from[k]))
		case (base == "ca" || base == "ca[]") && v != "":
			out = append(out, fmt.Sprintf("trusting%s the certificates of %s in %s", only, name, c.from[k]))
		case base == "strict-ssl" && v == "false":
			out = append(out, fmt.Sprintf("without checking the registry's certificate (strict-ssl=false in %s)", c.from[k]))
		case (base == "certfile" || base == "cert") && v != "":
			out = append(out, fmt.Sprintf("with your client certificate (%s in %s)", name, c.from[k]))
		}
	}
	switch {
	case c.extraCA != "" && replaced:
		out = append(out, fmt.Sprintf("not those in %s (NODE_EXTRA_CA_CERTS): npm's cafile or ca replaces node's authorities, these among them, as for your npx", c.extraCA))
	case c.extraCA != "":
		out = append([]string{fmt.Sprintf("trusting the certificates in %s (NODE_EXTRA_CA_CERTS) beside node's own", c.extraCA)}, out...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
