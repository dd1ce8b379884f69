package sandboxtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
)

// MapResolver resolves the names it maps to one address each, and no
// other: a test reaches its loopback server by a name such as
// allowed.test through the sandbox's proxy (netproxy.Resolver).
type MapResolver map[string]string

// LookupIPAddr answers host's address, or an error for a name not mapped.
func (m MapResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ip, ok := m[host]
	if !ok {
		return nil, fmt.Errorf("test resolver: no such host %q", host)
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

// HTTPServer serves body on a real loopback socket until the test ends.
func HTTPServer(t testing.TB, body string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln
}
