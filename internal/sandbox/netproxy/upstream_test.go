package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/internal/npmregistrytest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProxyThroughUpstream: an allowed host that only the person's
// proxy reaches (a name no resolver here knows) is reached through it,
// by CONNECT and by a plain request, with the proxy's credentials,
// which the tool never sends; a host not allowed is refused before the
// person's proxy is asked anything; a proxy that refuses, cannot be
// reached or is not an http:// one fails the connection with 502 and a
// refusal that names it, without its credentials.
func TestProxyThroughUpstream(t *testing.T) {
	target := sandboxtest.HTTPServer(t, "upstream")
	port := target.Addr().(*net.TCPAddr).Port
	name := fmt.Sprintf("registry.corp.test:%d", port)
	person := npmregistrytest.NewProxy(t, "ann", "s3cret pass")
	person.Route(name, target.Addr().String())
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closed.Close()

	cases := []struct {
		name, upstream string
		do             string // "connect" or "get"
		host           string
		code           int
		reason         string
	}{
		{"connect through the proxy", person.URL, "connect", name, 200, ""},
		{"plain request through the proxy", person.URL, "get", name, 200, ""},
		{"host not allowed", person.URL, "connect", "other.test:443", 403, NotAllowed},
		{"wrong credentials", strings.Replace(person.URL, "s3cret", "wrong", 1), "connect", name, 502, "it answered 407 Proxy Authentication Required"},
		{"wrong credentials, plain", strings.Replace(person.URL, "s3cret", "wrong", 1), "get", name, 502, "it answered 407 Proxy Authentication Required"},
		{"proxy not there", "http://" + closed.Addr().String(), "connect", name, 502, "connection refused"},
		{"socks proxy", "socks5://127.0.0.1:1080", "connect", name, 502, "an http:// proxy only, not socks5://"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &recordingResolver{m: map[string]string{}}
			var mu sync.Mutex
			var denied []Denial
			px, err := NewProxy([]string{name}, res, func(d Denial) {
				mu.Lock()
				denied = append(denied, d)
				mu.Unlock()
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			up, _ := url.Parse(c.upstream)
			px.Upstream = func(host string, p int) *url.URL {
				if host == "registry.corp.test" && p == port {
					return up
				}
				return nil
			}
			addr := serveProxy(t, px)
			before := len(person.Asked()) + len(person.Refused())
			code, body := throughProxy(t, addr, c.do, c.host)
			if code != c.code || (code == 200 && body != "upstream") {
				t.Fatalf("status %d (%q), want %d", code, body, c.code)
			}
			if len(res.lookup) > 0 {
				t.Errorf("the sandbox's proxy looked up %q: the person's proxy resolves", res.lookup)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.reason == "" {
				if len(denied) > 0 {
					t.Errorf("refused: %v", denied)
				}
				if !slices.Contains(person.Asked(), name) {
					t.Errorf("the person's proxy was asked %q", person.Asked())
				}
				return
			}
			if len(denied) != 1 || !strings.Contains(denied[0].Reason, c.reason) || strings.Contains(denied[0].String(), "s3cret") || strings.Contains(denied[0].String(), "wrong") {
				t.Errorf("refusals %v, want one saying %q, without the credentials", denied, c.reason)
			}
			if c.code == 502 && !strings.HasPrefix(denied[0].Reason, UpstreamReason) {
				t.Errorf("the refusal %q does not begin with %q", denied[0].Reason, UpstreamReason)
			}
			if c.code == 403 && len(person.Asked())+len(person.Refused()) != before {
				t.Errorf("the person's proxy was asked for a host not allowed")
			}
		})
	}
}

// throughProxy asks the proxy at addr for host: a tunnel (CONNECT) and
// a GET in it, or a plain absolute-form GET.
func throughProxy(t *testing.T, addr, how, host string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if how == "get" {
		fmt.Fprintf(c, "GET http://%s/x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host, host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(inner.Body)
	return 200, string(b)
}
