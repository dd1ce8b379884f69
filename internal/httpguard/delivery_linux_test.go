package httpguard_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/httpguard"
)

// TestDelivery: what a handler writes and flushes counts as acknowledged
// once the client's end has it, and never when the client's end closed
// before the write, though the write itself succeeds.
func TestDelivery(t *testing.T) {
	ln, err := httpguard.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	guard, err := httpguard.New(ln, httpguard.Config{Credential: "Bearer token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		write chan string
		done  chan error
	}
	steps := make(chan step, 1)
	meters := make(chan httpguard.Delivery, 1)
	srv := guard.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		meters <- httpguard.DeliveryOf(r)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		s := <-steps
		for msg := range s.write {
			_, err := fmt.Fprint(w, msg)
			if err == nil {
				err = http.NewResponseController(w).Flush()
			}
			s.done <- err
		}
	}))
	go srv.Serve(guard.Listener())
	t.Cleanup(func() { srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer token-0123456789\r\n\r\n", ln.Addr())
	r := bufio.NewReader(conn)
	if _, err := http.ReadResponse(r, nil); err != nil {
		t.Fatal(err)
	}
	meter := <-meters
	s := step{write: make(chan string), done: make(chan error)}
	steps <- s

	s.write <- "received\n"
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
	sent := meter.Sent()
	if !gemkittest.Poll(30*time.Second, time.Millisecond, func() bool {
		acked, ok := meter.Acked()
		return ok && acked == sent
	}) {
		acked, ok := meter.Acked()
		t.Fatalf("a write the client's end received: acked %d (%v) of %d", acked, ok, sent)
	}

	// Read to the end of what came, so that the close is a FIN, not the
	// reset a close with unread bytes sends (which fails the next write).
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "received\n" {
			break
		}
	}
	if _, err := r.ReadString('\n'); err != nil { // the chunk's end
		t.Fatal(err)
	}
	conn.Close()
	s.write <- "into a closed end\n"
	if err := <-s.done; err != nil {
		t.Fatalf("the first write after the client's close failed (%v): the test needs it to succeed, as it does on Linux", err)
	}
	if acked, ok := meter.Acked(); !ok || acked != sent {
		t.Fatalf("after the client's end closed: acked %d (%v), want %d: the last write counted as delivered", acked, ok, sent)
	}
	if meter.Sent() <= sent {
		t.Fatalf("the last write was not counted as sent: %d", meter.Sent())
	}
	close(s.write)
}
