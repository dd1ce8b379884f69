package netproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Reaching an allowed host through the person's own proxy: where a
// host is reachable only that way (a company's network, whose registry
// mirror or the public registry is behind an HTTP proxy), the sandbox's
// proxy asks that proxy for the host (CONNECT host:port, or an
// absolute-form request for plain HTTP) rather than dialling it. The
// tool still reaches only its allowed hosts: it talks to the sandbox's
// proxy alone, which checks the host first and asks the person's proxy
// for nothing else; the person's proxy's address and credentials (its
// URL's user and password, sent as Proxy-Authorization) stay in gemkit.

// UpstreamReason begins the reason of a connection to an allowed host
// that the person's proxy refused or that could not be made through it
// (Denial.Reason): it was not the sandbox's refusal.
const UpstreamReason = "through your proxy"

// UpstreamError is a connection through the person's proxy that failed:
// the proxy could not be reached, or answered other than 200.
type UpstreamError struct {
	// Proxy is the proxy's URL without its credentials.
	Proxy string
	// Status is its answer ("407 Proxy Authentication Required"), ""
	// when it gave none.
	Status string
	Err    error
}

func (e *UpstreamError) Error() string {
	if e.Status != "" {
		return fmt.Sprintf("%s %s: it answered %s", UpstreamReason, e.Proxy, e.Status)
	}
	return fmt.Sprintf("%s %s: %v", UpstreamReason, e.Proxy, e.Err)
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// Redacted is a proxy's URL without its credentials, to print.
func Redacted(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// upstreamFor is the proxy the host is reached through, nil for none.
func (p *Proxy) upstreamFor(host string, port int) *url.URL {
	if p.Upstream == nil {
		return nil
	}
	return p.Upstream(host, port)
}

// dialUpstream connects to the person's proxy u itself: its address is
// theirs, not the tool's, so a private one (a company's proxy at
// 10.0.0.8, or one on this machine) is reached without being listed;
// a connection to this machine still comes from permission.ProxySource
// and never reaches one of gemkit's own servers (dialAddrs).
func (p *Proxy) dialUpstream(ctx context.Context, u *url.URL) (net.Conn, error) {
	if u.Scheme != "http" {
		return nil, &UpstreamError{Proxy: Redacted(u), Err: fmt.Errorf("the sandbox's proxy reaches hosts through an http:// proxy only, not %s://", u.Scheme)}
	}
	host, port, err := splitTarget(u.Host, 80)
	if err != nil {
		return nil, &UpstreamError{Proxy: Redacted(u), Err: err}
	}
	var addrs []net.IPAddr
	if ip := net.ParseIP(host); ip != nil {
		addrs = []net.IPAddr{{IP: ip}}
	} else if host == "localhost" {
		addrs = []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}
	} else if addrs, err = p.resolver.LookupIPAddr(ctx, host); err != nil {
		return nil, &UpstreamError{Proxy: Redacted(u), Err: fmt.Errorf("resolving %s: %w", host, err)}
	}
	c, err := p.dialAddrs(ctx, host, addrs, port)
	if err != nil {
		return nil, &UpstreamError{Proxy: Redacted(u), Err: err}
	}
	return c, nil
}

// connectThrough opens a tunnel to host:port through the person's
// proxy u (CONNECT), with u's credentials when it has some.
func (p *Proxy) connectThrough(ctx context.Context, u *url.URL, host string, port int) (net.Conn, error) {
	c, err := p.dialUpstream(ctx, u)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	target := net.JoinHostPort(host, strconv.Itoa(port))
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if a := proxyAuthorization(u); a != "" {
		req.Header.Set("Proxy-Authorization", a)
	}
	br := bufio.NewReader(c)
	resp, err := func() (*http.Response, error) {
		if err := req.Write(c); err != nil {
			return nil, err
		}
		return http.ReadResponse(br, req)
	}()
	if err != nil {
		c.Close()
		return nil, &UpstreamError{Proxy: Redacted(u), Err: err}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, &UpstreamError{Proxy: Redacted(u), Status: resp.Status}
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// proxyAuthorization is the Proxy-Authorization of u's credentials, as
// npm's proxy agent sends them (Basic, the user and password decoded).
func proxyAuthorization(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	pass, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
}

// bufferedConn is a connection whose first bytes were read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the connection underneath, as a tunnel ends.
func (b *bufferedConn) CloseWrite() error {
	if c, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return c.CloseWrite()
	}
	return errors.ErrUnsupported
}

// upstreamTransport is the transport of a plain HTTP request to a host
// reached through the person's proxy u.
func (p *Proxy) upstreamTransport(u *url.URL) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyURL(u),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return p.dialUpstream(ctx, u)
		},
		DisableKeepAlives: true,
	}
}
