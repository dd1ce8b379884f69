package companion

import (
	"net"
	"os"
	"testing"
)

// TestPeerOf finds the process and folder at the other end of a loopback
// connection: here the test process itself, which dialled it.
func TestPeerOf(t *testing.T) {
	c := loopbackConn(t)
	p := peerOf(c)
	wd, _ := os.Getwd()
	if p.pid != os.Getpid() || p.dir != wd || p.bridged {
		t.Errorf("peerOf = %+v, want pid %d in %q, not bridged", p, os.Getpid(), wd)
	}
	if p := peerOf(peerConn{remote: "192.0.2.1:80", local: c.local}); p.pid != 0 {
		t.Errorf("a peer that is not on loopback was looked up: pid %d", p.pid)
	}
}

// TestIsBridge recognises the stdio bridge by its subcommand, whatever
// the program is called.
func TestIsBridge(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"/usr/local/bin/gemkit", "ide", "bridge", "/tmp/gemini/ide/gemini-ide-server-1-2.json"}, true},
		{[]string{"gk", "ide", "bridge"}, true},
		{[]string{"gemkit", "ide", "serve", "--editor", "lsp"}, false},
		{[]string{"gemkit", "bridge", "ide"}, false},
		{[]string{"gemkit"}, false},
		{nil, false},
	} {
		if got := isBridge(tc.args); got != tc.want {
			t.Errorf("isBridge(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// BenchmarkPeerOf is the cost of one lookup (all of /proc), which runs off
// the request's path once per client.
func BenchmarkPeerOf(b *testing.B) {
	c := loopbackConn(b)
	for b.Loop() {
		if p := peerOf(c); p.pid == 0 {
			b.Fatal("not found")
		}
	}
}

// loopbackConn is the server's side of a loopback connection that this
// process dialled; both ends close when the test does.
func loopbackConn(tb testing.TB) peerConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	return peerConn{remote: server.RemoteAddr().String(), local: server.LocalAddr().String()}
}
