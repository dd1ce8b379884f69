package companion

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
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

// TestClaudePeerLookedUpWhenListed: Claude Code's process is not looked
// up on its connect (its transport names the agent, and the lookup reads
// every process's descriptors as the agent starts), but when the clients
// are first listed; then it is known, and kept.
func TestClaudePeerLookedUpWhenListed(t *testing.T) {
	changes := make(chan struct{}, 100)
	srv := startServer(t, Config{Claude: true, ClaudeLockDir: t.TempDir(), OnClientsChange: func() { changes <- struct{}{} }})
	cc := dialClaude(t, srv)
	defer cc.c.CloseNow()
	select {
	case <-changes: // initialized
	case <-time.After(30 * time.Second):
		t.Fatal("Claude Code's connect was not announced")
	}
	srv.peers.wait(30 * time.Second) // any lookup begun on the connect has ended
	var info *clientInfo
	srv.claude.mu.Lock()
	for p := range srv.claude.peers {
		info = &p.info
	}
	srv.claude.mu.Unlock()
	info.mu.Lock()
	pid := info.peer.pid
	info.mu.Unlock()
	if pid != 0 {
		t.Errorf("Claude Code's process was looked up on its connect (pid %d)", pid)
	}
	wd, _ := os.Getwd()
	for range 2 {
		cl := srv.Clients()
		if len(cl) != 1 || cl[0].Agent != AgentClaude || cl[0].PID != os.Getpid() || cl[0].Dir != wd {
			t.Fatalf("Clients() = %+v, want Claude Code in this process (pid %d in %q)", cl, os.Getpid(), wd)
		}
	}
}

// BenchmarkPeerOfNewProcess is one lookup of a client that is a process
// started just before it connected, as an agent is: the lookup reads the
// descriptors of the processes newer than it, newest first.
func BenchmarkPeerOfNewProcess(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	client := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; read -r _")
	stdin, err := client.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Start(); err != nil {
		b.Fatalf("bash (CI and this machine have it): %v", err)
	}
	defer func() { stdin.Close(); _ = client.Wait() }()
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	c := peerConn{remote: server.RemoteAddr().String(), local: server.LocalAddr().String()}
	for b.Loop() {
		if p := peerOf(c); p.pid != client.Process.Pid {
			b.Fatalf("peerOf = pid %d, want %d", p.pid, client.Process.Pid)
		}
	}
}
