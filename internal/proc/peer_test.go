//go:build linux || darwin || freebsd

package proc

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestPeerUID: both ends of a Unix socket see this process's user, and
// SameUser takes the peer; a connection that is not a Unix socket is
// refused, since nothing can be read of its peer.
func TestPeerUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()
	for name, c := range map[string]*net.UnixConn{"client": client, "server": server} {
		uid, err := PeerUID(c)
		if err != nil || uid != os.Getuid() {
			t.Errorf("%s: PeerUID = %d, %v; want %d", name, uid, err, os.Getuid())
		}
		if err := SameUser(c); err != nil {
			t.Errorf("%s: SameUser: %v", name, err)
		}
	}

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		if c, err := tcp.Accept(); err == nil {
			c.Close()
		}
	}()
	tc, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if err := SameUser(tc); err == nil {
		t.Error("SameUser took a TCP connection")
	}
}
