package companion

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// brokenWriter is the response writer of an event stream whose client
// has gone: every write fails.
type brokenWriter struct{ h http.Header }

func (b brokenWriter) Header() http.Header     { return b.h }
func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset") }
func (brokenWriter) WriteHeader(int)           {}

// TestPutBackWakesOtherStream: a session with two event streams (a client
// that reconnected before its old stream was noticed dead) whose message
// was taken by the dead stream's pump still gets it on the live one.
func TestPutBackWakesOtherStream(t *testing.T) {
	srv := &Server{cfg: Config{PingInterval: time.Hour}}
	for i := range 50 {
		sess := newSession("s")
		ctx, cancel := context.WithCancel(context.Background())
		live := httptest.NewRecorder()
		stLive := newEventStream(live, cancel)
		stDead := newEventStream(brokenWriter{http.Header{}}, func() {})
		stLive.Flush()
		stDead.Flush()
		done := make(chan struct{}, 2)
		for _, st := range []*eventStream{stLive, stDead} {
			go func() {
				srv.pump(ctx, sess, st)
				done <- struct{}{}
			}()
		}
		sess.enqueue([]byte(`{"jsonrpc":"2.0","method":"ide/diffRejected","params":{"filePath":"/a"}}`), maxQueued, maxQueuedBytes)
		// The recorder's body grows with no event to wait on.
		if !gemkittest.Poll(30*time.Second, time.Millisecond, func() bool {
			stLive.mu.Lock()
			defer stLive.mu.Unlock()
			return strings.Contains(live.Body.String(), "ide/diffRejected")
		}) {
			t.Fatalf("round %d: the message taken by the dead stream never reached the live one", i)
		}
		cancel()
		<-done
		<-done
	}
}
