package companion

import (
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestClients: each kind of client is listed, by the name it gave at
// initialize, from when it connects to when it goes, and every change is
// announced.
func TestClients(t *testing.T) {
	changes := make(chan struct{}, 100)
	srv := startServer(t, Config{
		Claude:          true,
		ClaudeLockDir:   filepath.Join(t.TempDir(), "claude", "ide"),
		OnClientsChange: func() { changes <- struct{}{} },
	})
	names := func() []string {
		var out []string
		for _, c := range srv.Clients() {
			out = append(out, c.Name+" "+c.Version+" "+c.Transport)
		}
		return out
	}
	waitClients := func(want ...string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if got := names(); slices.Equal(got, want) {
				return
			}
			select {
			case <-changes:
			case <-deadline:
				t.Fatalf("clients %q, want %q", names(), want)
			}
		}
	}
	waitClients()

	h := dial(t, srv) // initialize, then the event stream
	waitClients("test 0 http")

	streamURL := "ws://127.0.0.1:" + strconv.Itoa(srv.Port()) + StreamPath
	ws := dialWS(t, streamURL, http.Header{"Authorization": {"Bearer " + srv.Token()}}, "")
	ws.initialize()
	waitClients("test 0 http", "test 1 websocket")

	cc := dialClaude(t, srv)
	waitClients("test 0 http", "test 1 websocket", "test 1 claude")

	// A session whose event stream closed is not listed; it is again once
	// its client reopens the stream.
	h.closeGET()
	waitClients("test 1 websocket", "test 1 claude")
	h.openGET()
	waitClients("test 0 http", "test 1 websocket", "test 1 claude")

	ws.c.CloseNow()
	cc.c.CloseNow()
	waitClients("test 0 http")
	h.close()
	waitClients()
}
