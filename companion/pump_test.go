package companion

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// memWire is the response writer of an event stream and the meter of its
// connection, in memory: every write succeeds, and the client's end
// acknowledges only what the test says it received (acked), as a client
// that closed its end acknowledges nothing written after.
type memWire struct {
	h http.Header

	mu    sync.Mutex
	buf   bytes.Buffer
	acked int64 // -1: everything written
	wrote chan struct{}
}

func newMemWire(acked int64) *memWire {
	return &memWire{h: http.Header{}, acked: acked, wrote: make(chan struct{}, 1024)}
}

func (w *memWire) Header() http.Header { return w.h }
func (w *memWire) WriteHeader(int)     {}
func (w *memWire) Flush()              {}

func (w *memWire) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *memWire) Sent() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.buf.Len())
}

func (w *memWire) Acked() (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.acked < 0 {
		return int64(w.buf.Len()), true
	}
	return min(w.acked, int64(w.buf.Len())), true
}

var eventRE = regexp.MustCompile(`(?m)^(?:id: (\d+)\n)?event: message\ndata: (.*)\n\n`)

// event is one SSE event as a client reads it.
type event struct {
	id   uint64
	data string
}

func (w *memWire) events() []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var evs []event
	for _, m := range eventRE.FindAllStringSubmatch(w.buf.String(), -1) {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		evs = append(evs, event{id, m[2]})
	}
	return evs
}

// outcomes are the diff outcomes among the events, each as its path.
func (w *memWire) outcomes() (paths []string, ids []uint64) {
	for _, ev := range w.events() {
		if m := regexp.MustCompile(`"filePath":"([^"]*)"`).FindStringSubmatch(ev.data); m != nil {
			paths = append(paths, m[1])
			ids = append(ids, ev.id)
		}
	}
	return paths, ids
}

// waitOutcomes waits until w carries n outcomes.
func (w *memWire) waitOutcomes(t *testing.T, n int) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		if paths, _ := w.outcomes(); len(paths) >= n {
			return paths
		}
		select {
		case <-w.wrote:
		case <-timeout:
			paths, _ := w.outcomes()
			t.Fatalf("waited for %d outcomes, have %q", n, paths)
		}
	}
}

// stream opens an event stream of sess on w and runs its pump until the
// returned function ends it.
func (srv *Server) stream(sess *session, w *memWire, lastEventID uint64) (end func()) {
	ctx, cancel := context.WithCancel(context.Background())
	st := newEventStream(w, cancel, w, lastEventID)
	st.Flush()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.pump(ctx, sess, st)
	}()
	return func() {
		cancel()
		<-done
	}
}

func rejected(path string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"ide/diffRejected","params":{"filePath":%q}}`, path)
}

func pumpServer() *Server {
	srv := &Server{cfg: Config{PingInterval: time.Hour}}
	srv.sess = newSessionRegistry(srv)
	ctx := []byte(`{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{}}`)
	srv.sess.ctxMsg.Store(&ctx)
	return srv
}

// TestWrittenNotReceivedIsWrittenAgain: outcomes written on a stream whose
// client's end has closed (the writes succeed; nothing is acknowledged)
// are written again, in order, on the client's next stream, after those
// it did receive. Taking a successful write for a delivered one lost them.
func TestWrittenNotReceivedIsWrittenAgain(t *testing.T) {
	srv := pumpServer()
	sess := newSession("s")
	first := newMemWire(-1)
	end := srv.stream(sess, first, 0)
	sess.enqueue(rejected("/f0"), maxQueued, maxQueuedBytes)
	first.waitOutcomes(t, 1)
	// The client's end closes: nothing written from here on arrives.
	first.mu.Lock()
	first.acked = int64(first.buf.Len())
	first.mu.Unlock()
	for _, p := range []string{"/f1", "/f2"} {
		sess.enqueue(rejected(p), maxQueued, maxQueuedBytes)
	}
	first.waitOutcomes(t, 3)
	end()

	second := newMemWire(-1)
	end = srv.stream(sess, second, 0)
	defer end()
	got := second.waitOutcomes(t, 2)
	if fmt.Sprint(got) != "[/f1 /f2]" {
		t.Fatalf("the next stream carried %q, want [/f1 /f2]", got)
	}
}

// TestLastEventIDSkipsWhatWasRead: a client that reconnects with the id
// of the last event it read gets what follows it, though its end
// acknowledged nothing (an end that received and closed without reading
// further, or a system that cannot tell).
func TestLastEventIDSkipsWhatWasRead(t *testing.T) {
	srv := pumpServer()
	sess := newSession("s")
	first := newMemWire(0)
	end := srv.stream(sess, first, 0)
	for _, p := range []string{"/f0", "/f1", "/f2"} {
		sess.enqueue(rejected(p), maxQueued, maxQueuedBytes)
	}
	first.waitOutcomes(t, 3)
	end()
	_, ids := first.outcomes()

	second := newMemWire(-1)
	end = srv.stream(sess, second, ids[1])
	defer end()
	got := second.waitOutcomes(t, 1)
	sess.enqueue(rejected("/f3"), maxQueued, maxQueuedBytes)
	got = second.waitOutcomes(t, 2)
	if fmt.Sprint(got) != "[/f2 /f3]" {
		t.Fatalf("after Last-Event-ID %d the stream carried %q, want [/f2 /f3]", ids[1], got)
	}
	// Ids grow across the session's streams, so that the next
	// Last-Event-ID names a point after everything read before.
	evs := second.events()
	if evs[0].id <= ids[2] {
		t.Fatalf("the new stream's first id %d is not after the old stream's last %d", evs[0].id, ids[2])
	}
}

// TestHandOverKeepsOrder: a client opens a new stream while its old one,
// which wrote an outcome its end never received, is still open: the old
// stream ends, and the new one carries that outcome before any queued
// since, though the newer was queued while both were open.
func TestHandOverKeepsOrder(t *testing.T) {
	for round := range 50 {
		srv := pumpServer()
		sess := newSession("s")
		old := newMemWire(0)
		ctxOld, cancelOld := context.WithCancel(context.Background())
		stOld := newEventStream(old, cancelOld, old, 0)
		stOld.Flush()
		oldDone := make(chan struct{})
		go func() {
			defer close(oldDone)
			srv.pump(ctxOld, sess, stOld)
		}()
		sess.enqueue(rejected("/f0"), maxQueued, maxQueuedBytes)
		old.waitOutcomes(t, 1)

		fresh := newMemWire(-1)
		endFresh := srv.stream(sess, fresh, 0)
		sess.enqueue(rejected("/f1"), maxQueued, maxQueuedBytes)
		stOld.abort() // as serveGet ends the older stream
		<-oldDone
		got := fresh.waitOutcomes(t, 2)
		endFresh()
		if fmt.Sprint(got[:2]) != "[/f0 /f1]" {
			t.Fatalf("round %d: the new stream carried %q, want /f0 then /f1", round, got)
		}
	}
}

// TestDeliveredLeaveTheOutbox: what the client's end acknowledged leaves
// the outbox, so that its bounds count only what may still be lost.
func TestDeliveredLeaveTheOutbox(t *testing.T) {
	srv := pumpServer()
	sess := newSession("s")
	w := newMemWire(-1)
	end := srv.stream(sess, w, 0)
	defer end()
	for i := range 3 * maxQueued {
		if !sess.enqueue(rejected(fmt.Sprint("/", i)), maxQueued, maxQueuedBytes) {
			t.Fatalf("message %d refused: delivered messages were still counted", i)
		}
		if i%maxQueued == maxQueued-1 {
			w.waitOutcomes(t, i+1)
		}
	}
	w.waitOutcomes(t, 3*maxQueued)
}
