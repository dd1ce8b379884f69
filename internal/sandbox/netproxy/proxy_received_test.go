package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestProxyCountsReceived: Received counts what the hosts sent through
// the proxy, a plain request's body and a tunnel's bytes alike, as it
// arrives (the tunnel is still open when it is read).
func TestProxyCountsReceived(t *testing.T) {
	body := strings.Repeat("x", 10000)
	up := sandboxtest.HTTPServer(t, body)
	port := up.Addr().(*net.TCPAddr).Port
	px, err := NewProxy([]string{fmt.Sprintf("127.0.0.1:%d", port)}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	px.Received = &n
	addr := serveProxy(t, px)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	c.Close()
	if len(b) != len(body) || n.Load() != int64(len(body)) {
		t.Errorf("a plain request: read %d bytes, Received %d, want %d", len(b), n.Load(), len(body))
	}

	n.Store(0)
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(io.LimitReader(resp.Body, int64(len(body))))
	if got := n.Load(); len(b) != len(body) || got < int64(len(body)) {
		t.Errorf("through a tunnel still open: read %d bytes, Received %d, want at least %d", len(b), got, len(body))
	}
}
