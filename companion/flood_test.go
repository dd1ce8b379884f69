package companion

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// TestRefusedBodyIsNotRead: a request without the token that announces a
// large body gets its 401 and its connection closed at once, though it
// never sends the body.
func TestRefusedBodyIsNotRead(t *testing.T) {
	srv := startServer(t, Config{})
	c, err := net.Dial("tcp", srv.hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 9000000\r\n\r\n{", srv.hosts[0])
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("status %d, close %v; want 401 and Connection: close", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open after the refusal (read: %v)", err)
	}
}

// TestFloodOfUnauthenticatedConnections: hundreds of connections without
// the token — some trickling headers, some announcing a large body and
// trickling it — neither exhaust the server's file descriptors nor keep
// an authorised client from being served.
func TestFloodOfUnauthenticatedConnections(t *testing.T) {
	const (
		limit     = 64
		slowHdrs  = 400 // send a partial header, then a byte now and then
		slowBody  = 400 // send full headers (no token), then trickle the body
		served    = 20 * time.Second
		floodTime = 4 * time.Second
	)
	srv := startServer(t, Config{MaxUnauthenticated: limit})
	fdsBefore := openFDs(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	attack := func(withBody bool) {
		defer wg.Done()
		c, err := net.Dial("tcp", srv.hosts[0])
		if err != nil {
			return // a full backlog refusing us is fine too
		}
		defer c.Close()
		if withBody {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: 9000000\r\n\r\n", srv.hosts[0])
			go func() {
				c.SetReadDeadline(time.Now().Add(floodTime + served))
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == http.StatusUnauthorized {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}()
		} else {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", srv.hosts[0])
		}
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return // the server closed it
				}
			}
		}
	}
	for i := 0; i < slowHdrs+slowBody; i++ {
		wg.Add(1)
		go attack(i%2 == 0)
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// A sleep: the flood must go on for a while, with no event to wait for.
	time.Sleep(floodTime / 2)

	// The authorised client is served while the flood goes on.
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := dial(t, srv)
		c.callTool("closeDiff", map[string]any{"filePath": "/none"})
	}()
	select {
	case <-done:
	case <-time.After(served):
		t.Fatalf("authorised client not served within %v under the flood", served)
	}
	t.Logf("authorised client served in %v under %d slow connections", time.Since(start), slowHdrs+slowBody)

	if n := srv.guard.Unauthenticated(); n > limit {
		t.Errorf("%d unauthenticated connections kept, limit %d", n, limit)
	}
	// This process holds both ends: the attackers' ends (at most one each)
	// and the server's, which must stay within the bound.
	if grown, most := openFDs(t)-fdsBefore, slowHdrs+slowBody+limit+32; grown > most {
		t.Errorf("%d more file descriptors open, want at most %d", grown, most)
	}
	// A sleep: the rest of the flood's time, with no event to wait for.
	time.Sleep(floodTime / 2)
	mu.Lock()
	defer mu.Unlock()
	if refused == 0 {
		t.Error("no flooding request got its 401")
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open files: %v", err)
	}
	return len(ents)
}
