package netproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
)

type mapResolver map[string]string

func (m mapResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ip, ok := m[host]
	if !ok {
		return nil, fmt.Errorf("test resolver: no such host %q", host)
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

// httpServer serves body on a real loopback socket.
func httpServer(t *testing.T, body string) net.Listener {
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
