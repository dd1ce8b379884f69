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
	pid, dir := peerOf(c)
	wd, _ := os.Getwd()
	if pid != os.Getpid() || dir != wd {
		t.Errorf("peerOf = pid %d in %q, want pid %d in %q", pid, dir, os.Getpid(), wd)
	}
	if pid, _ := peerOf(peerConn{remote: "192.0.2.1:80", local: c.local}); pid != 0 {
		t.Errorf("a peer that is not on loopback was looked up: pid %d", pid)
	}
}

// BenchmarkPeerOf is the cost of one lookup (all of /proc), which runs off
// the request's path once per client.
func BenchmarkPeerOf(b *testing.B) {
	c := loopbackConn(b)
	for b.Loop() {
		if pid, _ := peerOf(c); pid == 0 {
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
