package extmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// A remote server (url, httpUrl) is proxied as it is: gemkit connects to
// it itself, from its own process, outside the sandbox (there is no
// process of the extension's to confine), sending the manifest's
// headers only: a header value's $NAME or ${NAME} takes a declared
// setting's value, never the person's environment, which Gemini CLI
// would expand there. No sign-in: a server that asks for OAuth fails to
// connect, with its words.
//
// It stays where consent said: at the origin of its URL (scheme, host,
// port), which the consent text names. A redirect to another origin is
// not followed (Gemini CLI 0.61 follows every redirect: its transports
// call fetch with the default redirect mode, "follow", in
// StreamableHTTPClientTransport.send of @modelcontextprotocol/sdk 1.23.0,
// dist/esm/client/streamableHttp.js, and createUrlTransport of
// @google/gemini-cli-core, dist/src/tools/mcp-client.js, passes no
// other; a 307 keeps the method, the body and every header but
// Authorization), nor is an SSE endpoint event naming another origin.
// An address of this machine or of a network's own (netproxy.Special,
// the rule of the sandbox's proxy) is refused unless the person allowed
// that very host and port by name (gemkit extensions sandbox NAME
// --allow-host HOST:PORT), and gemkit's own servers are refused
// whatever is allowed, as the proxy refuses them; the check is made on
// the addresses the name resolves to when gemkit dials, so a name that
// resolves there (DNS rebinding) is refused too.

// connect connects to a remote server, bounded by its start timeout.
func (s *server) connect(ctx context.Context) (*running, error) {
	header := http.Header{}
	for k, v := range s.spec.Headers {
		if s.spec.Plugin == nil {
			v = expand(v, s.spec.Settings)
		}
		header.Set(k, v)
	}
	r := &running{exited: make(chan struct{}), done: make(chan struct{})}
	// The SSE transport's event stream lives on the context it connects
	// with: the connection's own, which the start timeout ends only
	// while connecting.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	stopped := context.AfterFunc(ctx, end)
	timer := time.AfterFunc(s.startTimeout(), end)
	// No client timeout: the event streams stay open as long as the
	// connection.
	refusal := &atomic.Pointer[reachError]{}
	hc, err := s.remoteClient(refusal)
	if err != nil {
		end()
		stopped()
		timer.Stop()
		return nil, err
	}
	opts := s.clientOptions(ctx, r)
	var client *mcpclient.Client
	switch s.spec.Transport {
	case TransportSSE:
		client, err = mcpclient.SSE(life, s.spec.URL, hc, header, opts)
	case TransportHTTP:
		client, err = mcpclient.HTTP(life, s.spec.URL, hc, header, opts)
	default:
		client, err = mcpclient.HTTP(life, s.spec.URL, hc, header, opts)
		if err != nil && life.Err() == nil {
			client, err = mcpclient.SSE(life, s.spec.URL, hc, header, opts)
		}
	}
	timedOut := !timer.Stop()
	stopped()
	if err != nil {
		end()
		if timedOut {
			return nil, fmt.Errorf("%s did not answer MCP's initialize at %s within %s", s.who(), Printable(s.spec.URL), s.startTimeout())
		}
		// A refusal of gemkit's own is said as it is: the SDK may report
		// only that the connection closed after it.
		refused := refusal.Load()
		if refused != nil || errors.As(err, &refused) {
			return nil, fmt.Errorf("%s is not connected to: %s", s.who(), refused.Error())
		}
		return nil, fmt.Errorf("%s could not be reached at %s: %s", s.who(), Printable(s.spec.URL), oneLine(err.Error()))
	}
	r.client = client
	r.kill = func() {
		_ = client.Abort()
		end()
	}
	r.wait = client.Wait
	go s.watch(r)
	s.m.log.Debug("MCP server connected", "extension", s.spec.Extension, "server", s.spec.Server, "url", s.spec.URL)
	return r, nil
}

// reachError is a connection gemkit does not make for a remote server:
// to another origin than its URL's, or to an address of this machine or
// of a private network not allowed by name.
type reachError struct{ msg string }

func (e *reachError) Error() string { return e.msg }

// remoteClient is the HTTP client of a remote server: it reaches the
// origin of the server's URL and nothing else (see above).
func (s *server) remoteClient(refusal *atomic.Pointer[reachError]) (*http.Client, error) {
	u, err := url.Parse(s.spec.URL)
	origin := extension.Origin(s.spec.URL)
	if err != nil || origin == "" {
		return nil, fmt.Errorf("%s is not connected to: its URL %s is not an http or https URL with a host", s.who(), Printable(s.spec.URL))
	}
	host := strings.ToLower(u.Hostname())
	port, _ := strconv.Atoi(origin[strings.LastIndex(origin, ":")+1:])
	target := net.JoinHostPort(host, strconv.Itoa(port))
	allowed := s.allowedByName(host, port)
	closedIn := permission.ClosedOf(envmap.Of(s.m.cfg.Environ).Get)
	base := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != target {
			// The person's own proxy (HTTPS_PROXY), which reaches the
			// server for gemkit: theirs to choose. Every request is of
			// the server's origin (originOnly).
			return dialer.DialContext(ctx, network, addr)
		}
		var ips []net.IP
		if ip := net.ParseIP(host); ip != nil {
			ips = []net.IP{ip}
		} else {
			as, err := net.DefaultResolver.LookupIPAddr(ctx, host)
			if err != nil {
				return nil, err
			}
			for _, a := range as {
				ips = append(ips, a.IP)
			}
		}
		var refused error
		var last error
		for _, ip := range ips {
			if err := s.reach(ip, host, port, allowed, closedIn); err != nil {
				refused = err
				continue
			}
			c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			if err == nil {
				return c, nil
			}
			last = err
		}
		if last == nil && refused != nil {
			var re *reachError
			if errors.As(refused, &re) {
				refusal.CompareAndSwap(nil, re)
			}
			return nil, refused
		}
		if last == nil {
			last = fmt.Errorf("%s has no addresses", host)
		}
		return nil, last
	}
	return &http.Client{
		Transport: originOnly{origin: origin, base: base, refusal: refusal},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if o := extension.Origin(req.URL.String()); o != origin {
				e := &reachError{fmt.Sprintf("%s answered with a redirect to %s, another origin than %s, which your consent to the extension named; gemkit does not follow it (nor send the entry's headers and body there)",
					Printable(via[len(via)-1].URL.Redacted()), Printable(req.URL.Redacted()), Printable(origin))}
				refusal.CompareAndSwap(nil, e)
				return e
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}, nil
}

// originOnly sends the requests of one origin and refuses every other:
// an SSE server's endpoint event, which says where to post, naming
// another origin among them.
type originOnly struct {
	origin string
	base   http.RoundTripper
	// refusal keeps the first refusal, for the words of a failed
	// connect.
	refusal *atomic.Pointer[reachError]
}

func (o originOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if got := extension.Origin(req.URL.String()); got != o.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		e := &reachError{fmt.Sprintf("it asked gemkit to send to %s, another origin than %s, which your consent to the extension named; gemkit does not",
			Printable(req.URL.Redacted()), Printable(o.origin))}
		o.refusal.CompareAndSwap(nil, e)
		return nil, e
	}
	if req.Method == http.MethodDelete {
		return o.endSession(req)
	}
	return o.base.RoundTrip(req)
}

// sessionEndBound bounds the request that ends a Streamable HTTP
// session (DELETE), which gemkit sends when it stops the server: a
// server may answer it only once the calls it holds are over (the Go
// SDK's does), and the SDK sends it on the way of the last call cut
// short, before that call's notifications/cancelled, so the server
// hears of neither until the request gives up (the SDK's own bound is
// 5 s, under the server's lock in gemkit). A session not ended in time
// ends on the server's own terms, as that of a client gone.
const sessionEndBound = time.Second

func (o originOnly) endSession(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), sessionEndBound)
	resp, err := o.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose is a response body whose request's context ends when
// the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// reach says why gemkit does not connect to ip for the server's host and
// port, or nil: an address of this machine or of a network's own
// (netproxy.Special) only when the person allowed that host and port by
// name, and never one of gemkit's own servers on this machine.
func (s *server) reach(ip net.IP, host string, port int, allowed bool, closedIn permission.ClosedInputs) error {
	if !netproxy.Special(ip) {
		return nil
	}
	where := net.JoinHostPort(host, strconv.Itoa(port))
	if netproxy.ThisMachine(ip) && permission.OwnServerPort(closedIn, port) {
		return &reachError{fmt.Sprintf("%s (%s) is one of gemkit's own servers on this computer, or an IDE companion's, which no extension's server is given, whatever is allowed", Printable(where), ip)}
	}
	name := net.ParseIP(host) == nil && host != "localhost"
	ipPort := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	switch {
	case allowed && !name:
		return nil
	case allowed && s.addressListed(ip, port):
		return nil
	case allowed:
		// As the sandbox's proxy: a name reaches such an address only
		// when the address is listed too, since whoever answers the
		// name's lookup chooses where it points (DNS rebinding).
		return &reachError{fmt.Sprintf("%s resolves to %s, an address of this computer or of a private network, which gemkit reaches for a name only when the address is allowed too: gemkit extensions sandbox %s --allow-host %s",
			Printable(where), ip, Printable(s.spec.Extension), Printable(ipPort))}
	}
	what := "a private network's address"
	if netproxy.ThisMachine(ip) {
		what = "this computer's own address"
	}
	if ip.String() != host {
		what += " (the name resolves to " + ip.String() + ")"
	}
	return &reachError{fmt.Sprintf("%s is %s, which gemkit reaches for an extension only when you allow that very host and port: gemkit extensions sandbox %s --allow-host %s",
		Printable(where), what, Printable(s.spec.Extension), Printable(where))}
}

// addressListed reports whether the widening lists the address ip for
// port, as the sandbox's proxy reads its allowlist (permission.Host's
// Matches: an address with no port is any port).
func (s *server) addressListed(ip net.IP, port int) bool {
	for _, e := range s.spec.Widening.Hosts {
		if h, err := permission.ParseHost(e); err == nil && h.Matches(ip.String(), port) {
			return true
		}
	}
	return false
}

// allowedByName reports whether the person allowed host:port by name,
// exactly: an entry of the servers' widening that is that host (not a
// wildcard) with that port (written, or the scheme's).
func (s *server) allowedByName(host string, port int) bool {
	for _, e := range s.spec.Widening.Hosts {
		h, err := permission.ParseHost(e)
		if err != nil || h.Wildcard || h.Port == 0 && h.Scheme == "" {
			continue
		}
		if h.Matches(host, port) {
			return true
		}
	}
	return false
}
