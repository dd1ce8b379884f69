package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// tunnelScript asks the proxy at 127.0.0.1:3128 for a CONNECT tunnel to
// each host:port argument and a GET through it, printing REACHED with the
// answer or refused with the proxy's words. It writes CONNECT itself so
// that an IPv6 literal goes out bracketed whatever the Python version.
const tunnelScript = `import socket, sys
for target in sys.argv[1:]:
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        status = head.split(b"\r\n", 1)[0].decode()
        if " 200 " not in status:
            print("refused", target, status, head.split(b"\r\n\r\n", 1)[-1].decode().strip())
            continue
        s.sendall(b"POST /write-file HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
        body = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
        print("REACHED", target, body.split(b"\r\n\r\n", 1)[-1].decode().strip())
    except Exception as e:
        print("refused", target, e)
`

// sourceServer is a companion-like server: it writes (says WROTE) for a
// local client and refuses, as gemkit's servers do, a connection from
// permission.ProxySource; every peer it saw is kept.
type sourceServer struct {
	port  int
	mu    sync.Mutex
	peers []string
}

func listenSource(t *testing.T, network, addr string) *sourceServer {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &sourceServer{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.peers = append(s.peers, r.RemoteAddr)
		s.mu.Unlock()
		if permission.FromSandbox(r.RemoteAddr) {
			http.Error(w, "request refused: it came through a sandbox", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "WROTE")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// hostAddrs returns this machine's non-loopback interface addresses, IPv4
// and IPv6 (link-local ones left out: they need a zone to dial).
func hostAddrs(t *testing.T) (v4, v6 []net.IP) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			v4 = append(v4, n.IP)
		} else {
			v6 = append(v6, n.IP)
		}
	}
	return v4, v6
}

// TestProxySourceForEveryLocalAddress: whatever form of this machine's
// address a tool was allowed (the unspecified addresses, another
// loopback address, an IPv4-mapped one, a name resolving to one of them,
// an address of an interface), a companion-like server listening on all
// addresses or on the interface's own sees the connection come from
// permission.ProxySource, and so refuses it, or the proxy refuses the
// connection with words. Before, allowedHosts ["0.0.0.0:P"] was dialled
// from 127.0.0.1 and the server took it for a local client: it wrote.
func TestProxySourceForEveryLocalAddress(t *testing.T) {
	python := systemPython(t)
	v4, v6 := hostAddrs(t)
	if len(v4) == 0 {
		t.Skip("this machine has no non-loopback IPv4 address to listen on; CI's has one (eth0)")
	}
	any4 := listenSource(t, "tcp4", "0.0.0.0:0")
	dual := listenSource(t, "tcp", "[::]:0")
	own := listenSource(t, "tcp4", net.JoinHostPort(v4[0].String(), "0"))
	servers := []*sourceServer{any4, dual, own}

	// Control: a local client is served on each of them.
	for _, u := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", any4.port),
		fmt.Sprintf("http://[::1]:%d/", dual.port),
		fmt.Sprintf("http://%s/", net.JoinHostPort(v4[0].String(), fmt.Sprint(own.port))),
	} {
		resp, err := http.Post(u, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "WROTE" {
			t.Fatalf("a local client of %s got %q", u, b)
		}
	}
	for _, s := range servers {
		s.mu.Lock()
		s.peers = nil
		s.mu.Unlock()
	}

	hp := func(host string, port int) string { return net.JoinHostPort(host, fmt.Sprint(port)) }
	var targets, refusedV6 []string
	for _, s := range []*sourceServer{any4, dual} {
		targets = append(targets, hp("0.0.0.0", s.port), hp("127.0.0.1", s.port), hp("127.9.9.9", s.port),
			hp(v4[0].String(), s.port), hp("zero.test", s.port), hp("mapped.test", s.port), hp("mappedzero.test", s.port),
			hp("hostname.test", s.port))
		refusedV6 = append(refusedV6, hp("::", s.port), hp("::1", s.port), hp("six.test", s.port))
		for _, ip := range v6 {
			refusedV6 = append(refusedV6, hp(ip.String(), s.port))
		}
	}
	targets = append(targets, hp(v4[0].String(), own.port), hp("hostname.test", own.port))
	all := append(append([]string(nil), targets...), refusedV6...)

	var mu sync.Mutex
	var denied []netproxy.Denial
	l := &Launcher{
		Resolver: sandboxtest.MapResolver{"zero.test": "0.0.0.0", "mapped.test": "::ffff:127.0.0.1", "mappedzero.test": "::ffff:0.0.0.0",
			"six.test": "::1", "hostname.test": v4[0].String()},
		AllowPrivateAddresses: true,
		OnDeny: func(d netproxy.Denial) {
			mu.Lock()
			denied = append(denied, d)
			mu.Unlock()
		},
	}
	w := newWorld(t)
	p := w.policy(permission.AccessNone, permission.AccessNone, all...)
	r := run(t, l, p, 60*time.Second, append([]string{python, "-c", tunnelScript}, all...)...)
	if r.err != nil {
		t.Fatalf("%v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("a server took the proxy's connection for a local client's:\n%s", r.stdout)
	}
	for _, tg := range targets {
		if !strings.Contains(r.stdout, "REACHED "+tg+" request refused: it came through a sandbox") {
			t.Errorf("%s: not reached from the proxy's own address:\n%s", tg, r.stdout)
		}
	}
	for _, tg := range refusedV6 {
		if !strings.Contains(r.stdout, "refused "+tg+" ") {
			t.Errorf("%s (IPv6 to this machine) was not refused:\n%s", tg, r.stdout)
		}
	}
	for _, s := range servers {
		s.mu.Lock()
		for _, peer := range s.peers {
			if !permission.FromSandbox(peer) {
				t.Errorf("port %d saw a connection from %s, not from %s", s.port, peer, permission.ProxySource)
			}
		}
		s.mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(denied) != len(refusedV6) {
		t.Errorf("%d denials for %d IPv6 targets: %v", len(denied), len(refusedV6), denied)
	}
	for _, d := range denied {
		if !strings.Contains(d.Reason, "reaches this machine only from its own address") {
			t.Errorf("denial without words: %v", d)
		}
	}
}
