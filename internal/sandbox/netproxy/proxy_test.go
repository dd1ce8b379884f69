package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// recordingResolver maps names and records which were looked up.
type recordingResolver struct {
	mu     sync.Mutex
	m      map[string]string
	lookup []string
}

func (r *recordingResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookup = append(r.lookup, host)
	ip, ok := r.m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

func TestProxyRules(t *testing.T) {
	up := sandboxtest.HTTPServer(t, "upstream")
	port := up.Addr().(*net.TCPAddr).Port
	res := &recordingResolver{m: map[string]string{"allowed.test": "127.0.0.1", "api.sub.example.test": "127.0.0.1", "sub.example.test": "127.0.0.1"}}
	var denied []Denial
	var mu sync.Mutex
	px, err := NewProxy([]string{fmt.Sprintf("http://allowed.test:%d", port), "*.sub.example.test"}, res, func(d Denial) {
		mu.Lock()
		denied = append(denied, d)
		mu.Unlock()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	px.AllowPrivate = true
	addr := serveProxy(t, px)

	get := func(target string) (int, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	connect := func(target string) (int, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			return resp.StatusCode, ""
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		inner, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(inner.Body)
		return 200, string(b)
	}

	cases := []struct {
		name   string
		do     func(string) (int, string)
		target string
		code   int
	}{
		{"plain allowed", get, fmt.Sprintf("http://allowed.test:%d/x", port), 200},
		{"plain allowed, name case and dot", get, fmt.Sprintf("http://ALLOWED.test.:%d/x", port), 200},
		{"plain wrong port", get, fmt.Sprintf("http://allowed.test:%d/x", port+1), 403},
		{"plain other host", get, fmt.Sprintf("http://other.test:%d/", port), 403},
		{"plain IP literal not listed", get, fmt.Sprintf("http://127.0.0.1:%d/", port), 403},
		{"origin-form is not a proxy request", get, "/relative", 403},
		{"connect allowed", connect, fmt.Sprintf("allowed.test:%d", port), 200},
		{"connect wildcard subdomain, any port", connect, fmt.Sprintf("api.sub.example.test:%d", port), 200},
		{"connect wildcard does not match the bare domain", connect, fmt.Sprintf("sub.example.test:%d", port), 403},
		{"connect other host", connect, "evil.test:443", 403},
		{"connect suffix trick", connect, fmt.Sprintf("allowed.test.evil.test:%d", port), 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := c.do(c.target)
			if code != c.code {
				t.Fatalf("status %d, want %d (%s)", code, c.code, body)
			}
			if code == 200 && body != "upstream" {
				t.Fatalf("body %q", body)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(denied) != 7 || len(px.Denied()) != 7 {
		t.Fatalf("denials %v", denied)
	}
	// Names are checked before they are resolved: a denied name never
	// reaches the resolver.
	for _, h := range res.lookup {
		if strings.Contains(h, "other") || strings.Contains(h, "evil") || h == "sub.example.test" {
			t.Fatalf("denied host %q was resolved", h)
		}
	}
}

// TestProxyRefusesPrivateAddressesOfNames: an allowed name that resolves
// to this machine or its network is refused (DNS rebinding), with the
// address named so that listing it too allows it; a name listed beside
// its private address (a company mirror) is reached; once the name
// resolves elsewhere (rebinding to an address not listed, or the listed
// one on another port) it is refused again.
func TestProxyRefusesPrivateAddressesOfNames(t *testing.T) {
	up := sandboxtest.HTTPServer(t, "upstream")
	port := up.Addr().(*net.TCPAddr).Port
	get := func(px *Proxy, target string) (int, string) {
		t.Helper()
		addr := serveProxy(t, px)
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}}
		resp, err := client.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	listed := fmt.Sprintf("127.0.0.1:%d", port)

	// The name alone: refused, and the refusal names the address to list.
	res := &recordingResolver{m: map[string]string{"mirror.test": "127.0.0.1"}}
	px, err := NewProxy([]string{"mirror.test"}, res, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(px, fmt.Sprintf("http://mirror.test:%d/", port))
	if code != 403 || !strings.Contains(body, "private address 127.0.0.1") || !strings.Contains(body, "lists the address too ("+listed+")") {
		t.Fatalf("name resolving to loopback: %d %s", code, body)
	}
	if d := px.Denied(); len(d) != 1 || !strings.Contains(d[0].Reason, PrivateReason) || d[0].Addr != "127.0.0.1" || d[0].Host != "mirror.test" {
		t.Fatalf("denials %+v", d)
	}

	// The name and its address, as the refusal says: reached, by name
	// and by address.
	px, err = NewProxy([]string{"mirror.test", listed}, res, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{fmt.Sprintf("http://mirror.test:%d/", port), "http://" + listed + "/"} {
		if code, body := get(px, target); code != 200 || body != "upstream" {
			t.Fatalf("%s with the name and its address listed: %d %s", target, code, body)
		}
	}

	// Rebinding: the name now resolves to another private address, or
	// the listed one is asked on another port: refused.
	other := sandboxtest.HTTPServer(t, "other")
	otherPort := other.Addr().(*net.TCPAddr).Port
	res.mu.Lock()
	res.m["mirror.test"] = "127.0.0.2"
	res.mu.Unlock()
	code, body = get(px, fmt.Sprintf("http://mirror.test:%d/", port))
	if code != 403 || !strings.Contains(body, "private address 127.0.0.2") {
		t.Fatalf("the name rebound to an address not listed: %d %s", code, body)
	}
	res.mu.Lock()
	res.m["mirror.test"] = "127.0.0.1"
	res.mu.Unlock()
	px, err = NewProxy([]string{"mirror.test", listed}, res, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, body = get(px, fmt.Sprintf("http://mirror.test:%d/", otherPort))
	if code != 403 || strings.Contains(body, "other") {
		t.Fatalf("the listed address on another port: %d %s", code, body)
	}
	for _, c := range []struct {
		ip      string
		private bool
	}{{"127.0.0.1", true}, {"10.1.2.3", true}, {"192.168.1.1", true}, {"169.254.169.254", true}, {"::1", true}, {"fd00::1", true}, {"100.64.1.1", true}, {"0.0.0.0", true}, {"93.184.216.34", false}, {"2606:2800:220:1::1", false},
		// RFC 6890's other special-purpose blocks, and IPv6 forms of
		// IPv4 ones.
		{"0.1.2.3", true}, {"192.0.0.8", true}, {"192.0.2.2", true}, {"198.51.100.7", true}, {"203.0.113.9", true},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"240.0.0.1", true}, {"255.255.255.255", true}, {"224.0.0.251", true},
		{"192.88.99.1", true}, {"::ffff:127.0.0.1", true}, {"::ffff:192.0.2.2", true}, {"::ffff:93.184.216.34", false},
		{"64:ff9b::7f00:1", true}, {"2001:db8::1", true}, {"2002:7f00:1::1", true}, {"fe80::1", true}, {"ff02::1", true}, {"::", true},
		{"100::1", true}, {"2001::1", true}, {"1.1.1.1", false}, {"198.20.0.1", false}} {
		if got := isPrivate(net.ParseIP(c.ip)); got != c.private {
			t.Errorf("isPrivate(%s) = %v", c.ip, got)
		}
	}
}

// TestProxyHostileRequests: what a tool could send the proxy by hand to
// get past the allowlist.
func TestProxyHostileRequests(t *testing.T) {
	// The upstream echoes the Host it was asked for.
	uln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	usrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "host=%s", r.Host) })}
	go usrv.Serve(uln)
	defer usrv.Close()
	port := uln.Addr().(*net.TCPAddr).Port

	px, err := NewProxy([]string{fmt.Sprintf("allowed.test:%d", port)}, sandboxtest.MapResolver{"allowed.test": "127.0.0.1", "evil.test": "127.0.0.1"}, func(Denial) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	px.AllowPrivate = true
	addr := serveProxy(t, px)

	// send writes raw and returns every response read back.
	send := func(raw string, n int) []string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go io.WriteString(c, raw)
		br := bufio.NewReader(c)
		var out []string
		for i := 0; i < n; i++ {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, fmt.Sprintf("%d %s", resp.StatusCode, b))
		}
		return out
	}
	allowed := fmt.Sprintf("allowed.test:%d", port)
	cases := []struct {
		name, raw string
		n         int
		want      []string // prefixes of the responses, in order
	}{
		{"CONNECT to an IPv6 literal", fmt.Sprintf("CONNECT [::1]:%d HTTP/1.1\r\nHost: [::1]:%d\r\n\r\n", port, port), 1, []string{"403"}},
		{"CONNECT to an IPv4 literal of the allowed host", fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: %s\r\n\r\n", port, allowed), 1, []string{"403"}},
		{"CONNECT without a port", "CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 1, []string{"4"}},
		{"CONNECT to another port of the allowed host", fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: %s\r\n\r\n", port+1, allowed), 1, []string{"403"}},
		{"CONNECT with user info naming the allowed host", fmt.Sprintf("CONNECT %s@evil.test:%d HTTP/1.1\r\nHost: %[1]s\r\n\r\n", allowed, port), 1, []string{"4"}},
		{"Host header differs from the absolute URL", fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", allowed), 1, []string{"200 host=" + allowed}},
		{"a denied request pipelined after an allowed one", fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %[1]s\r\n\r\nGET http://evil.test:%d/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", allowed, port), 2, []string{"200 host=", "403"}},
		// Go reads the body as chunked and drops the Content-Length; the
		// request after it is a request of its own, checked like any.
		{"Content-Length and Transfer-Encoding together", fmt.Sprintf("POST http://%s/ HTTP/1.1\r\nHost: %[1]s\r\nContent-Length: 70\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://evil.test:%d/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", allowed, port), 2, []string{"200 host=" + allowed, "403"}},
		{"unbounded headers", fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %[1]s\r\nX: %s\r\n\r\n", allowed, strings.Repeat("a", 2<<20)), 1, []string{"431"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := send(c.raw, c.n)
			if len(got) != len(c.want) {
				t.Fatalf("responses %q, want %q", got, c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Fatalf("response %d %q, want %q...", i, got[i], w)
				}
			}
		})
	}
}

// serveProxy serves px on a loopback port until the test ends and returns
// its address.
func serveProxy(t *testing.T, px *Proxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go px.Serve(ln)
	t.Cleanup(func() { px.Close() })
	return ln.Addr().String()
}

// TestProxyReportsUnreachable: an allowed host the network does not
// reach (a name that does not resolve, a port nobody listens on) is
// kept with the refusals, in words that say it is the network's, not
// gemkit's: the server's own error ("fetch failed") said nothing.
func TestProxyReportsUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listed := closed.Addr().String()
	closed.Close()
	res := &recordingResolver{m: map[string]string{}}
	px, err := NewProxy([]string{"gone.test", listed}, res, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveProxy(t, px)
	for _, c := range []struct{ target, why string }{
		{"gone.test:443", "its name does not resolve"},
		{listed, "it refused the connection"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", c.target, c.target)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("CONNECT %s: %d, want 502", c.target, resp.StatusCode)
		}
	}
	d := px.Denied()
	if len(d) != 2 {
		t.Fatalf("kept %d, want 2: %+v", len(d), d)
	}
	for i, why := range []string{"its name does not resolve", "it refused the connection"} {
		if !strings.HasPrefix(d[i].Reason, Unreachable+": ") || !strings.Contains(d[i].Reason, why) {
			t.Errorf("kept %q, want %q: %s", d[i].Reason, Unreachable, why)
		}
	}
}
