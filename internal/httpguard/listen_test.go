package httpguard

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/gemkit/gemkit/internal/permission"
)

// TestListen: only IPv4 loopback is listened on, never the sandbox
// proxy's own address nor IPv6 loopback (where the proxy cannot be told
// apart), and Hosts names the address and localhost with its port.
func TestListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::1]:0", permission.ProxySource.String() + ":0", "example.com:0", "127.0.0.1"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("%s was accepted as an address to listen on", addr)
		}
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).AddrPort().Port()
	want := []string{ln.Addr().String(), net.JoinHostPort("localhost", strconv.Itoa(int(port)))}
	if got := Hosts(ln.Addr()); !slices.Equal(got, want) {
		t.Errorf("Hosts = %q, want %q", got, want)
	}
}
