package companion

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// A session's outbox is bounded in count and in bytes. A session past
// either bound is not keeping up (its client is paused, or gone without
// closing its stream): it is closed rather than allowed to grow, and
// nothing is dropped from a session that stays open. Its client reconnects
// with a new session and gets the current context then.
const (
	maxQueued      = 1024
	maxQueuedBytes = 64 << 20
	// eventWriteTimeout bounds one write to an event stream: a client
	// that reads nothing for this long has its stream ended.
	eventWriteTimeout = 30 * time.Second
)

// pingMessage is the keep-alive the official companion sends (gemini-cli
// 0.61.0 packages/vscode-ide-companion/src/ide-server.ts): a notification
// without an id, which clients ignore.
var pingMessage = []byte(`{"jsonrpc":"2.0","method":"ping"}`)

// sessionRegistry holds the MCP sessions and delivers notifications to
// them. Delivery does not use the SDK's per-session queue, which holds 100
// messages and drops the rest: each session has its own outbox in which
// context updates coalesce (only the latest matters) and diff outcomes
// wait, in order, for the session's event stream.
type sessionRegistry struct {
	srv *Server

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool

	ctxMu  sync.Mutex             // serialises building ctxMsg
	ctxMsg atomic.Pointer[[]byte] // the latest ide/contextUpdate message
}

type session struct {
	id   string
	info clientInfo

	mu         sync.Mutex
	lastActive time.Time
	active     int // requests in flight, event streams included
	gotGET     bool
	out        outbox
	streams    map[*eventStream]struct{}
	wake       chan struct{}
	// writer is held by the one stream that writes the outbox: a stream
	// opened again waits there until the one before it has given back
	// what it did not deliver, so that order holds across the hand-over.
	writer chan struct{}

	// closing is closed at shutdown: each pump writes what is queued,
	// then ends its stream.
	closing   chan struct{}
	closeOnce sync.Once
}

func newSession(id string) *session {
	return &session{
		id:         id,
		lastActive: time.Now(),
		streams:    map[*eventStream]struct{}{},
		wake:       make(chan struct{}, 1),
		writer:     make(chan struct{}, 1),
		closing:    make(chan struct{}),
	}
}

func newSessionRegistry(srv *Server) *sessionRegistry {
	return &sessionRegistry{srv: srv, sessions: map[string]*session{}}
}

// newSessionID makes a random UUID (version 4), as the official companion
// (gemini-cli 0.61.0 packages/vscode-ide-companion/src/ide-server.ts,
// sessionIdGenerator) uses.
func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// add registers a session that initialize just created for the client
// that says of itself what info holds.
func (r *sessionRegistry) add(id string, info initInfo, conn peerConn) {
	r.mu.Lock()
	if _, ok := r.sessions[id]; r.closed || ok {
		r.mu.Unlock()
		return
	}
	sess := newSession(id)
	sess.info.set(info)
	r.sessions[id] = sess
	r.mu.Unlock()
	// findPeer tells OnClientsChange once it knows the client's process,
	// so that the status line names it at once rather than twice.
	r.srv.findPeer(&sess.info, conn)
}

func (r *sessionRegistry) get(id string) *session {
	if id == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// remove forgets session id and ends its event streams.
func (r *sessionRegistry) remove(id string) *session {
	r.mu.Lock()
	sess := r.sessions[id]
	delete(r.sessions, id)
	r.mu.Unlock()
	if sess != nil {
		sess.endStreams()
		r.srv.clientsChanged()
	}
	return sess
}

func (r *sessionRegistry) all() []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.sessions))
}

// closeAll ends every session at shutdown: each event stream first
// writes what its session has queued (the outcomes of diffs answered as
// the companion stops, which a CLI waits for), until ctx ends; the
// streams still open then are cut.
func (r *sessionRegistry) closeAll(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	all := r.sessions
	r.sessions = map[string]*session{}
	r.mu.Unlock()
	for _, s := range all {
		s.closeOnce.Do(func() { close(s.closing) })
	}
	for _, s := range all {
		s.waitStreams(ctx)
	}
	for _, s := range all {
		s.endStreams()
	}
	if len(all) > 0 {
		r.srv.clientsChanged()
	}
}

// sweep expires sessions that have had no event stream open and no
// request in flight for the idle TTL.
func (r *sessionRegistry) sweep(ctx context.Context) {
	ttl := r.srv.cfg.SessionIdleTTL
	t := time.NewTicker(max(ttl/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, s := range r.all() {
				if s.idleSince(now) < ttl {
					continue
				}
				r.srv.log.Debug("session expired", "session", s.id)
				r.remove(s.id)
			}
		}
	}
}

// begin marks a request of the session in flight; end marks it done.
func (s *session) begin() {
	s.mu.Lock()
	s.active++
	s.lastActive = time.Now()
	s.mu.Unlock()
}

func (s *session) end() {
	s.mu.Lock()
	s.active--
	s.lastActive = time.Now()
	s.mu.Unlock()
}

func (s *session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return now.Sub(s.lastActive)
}

// enqueue adds a message that must reach the session. It reports false,
// queueing nothing, when the outbox would pass its bounds (maxCount
// messages, maxBytes bytes): the caller then closes the session.
func (s *session) enqueue(msg []byte, maxCount, maxBytes int) bool {
	s.mu.Lock()
	ok := s.out.add(msg, maxCount, maxBytes)
	s.mu.Unlock()
	if ok {
		s.signal()
	}
	return ok
}

// markContext asks for the latest context to be sent to the session.
func (s *session) markContext() {
	s.mu.Lock()
	s.out.ctx = true
	s.mu.Unlock()
	s.signal()
}

func (s *session) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// withOutbox runs f on the session's outbox under its lock.
func (s *session) withOutbox(f func(o *outbox)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.out)
}

// waitStreams returns once every event stream of s has ended, or ctx has.
func (s *session) waitStreams(ctx context.Context) {
	s.mu.Lock()
	ended := make([]chan struct{}, 0, len(s.streams))
	for st := range s.streams {
		ended = append(ended, st.ended)
	}
	s.mu.Unlock()
	for _, e := range ended {
		select {
		case <-e:
		case <-ctx.Done():
			return
		}
	}
}

func (s *session) endStreams() {
	s.mu.Lock()
	streams := make([]*eventStream, 0, len(s.streams))
	for st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	for _, st := range streams {
		st.abort()
	}
}

// broadcastContext is called after the debounce: it builds the context
// message once and asks every session for it.
func (s *Server) broadcastContext() {
	// A debounce timer may fire again while this runs; serialising keeps
	// an older state from overwriting a newer one.
	s.sess.ctxMu.Lock()
	msg, err := notification(ide.MethodContextUpdate, s.Context())
	if err != nil {
		s.sess.ctxMu.Unlock()
		s.log.Error("encoding context update", "err", err)
		return
	}
	s.sess.ctxMsg.Store(&msg)
	s.sess.ctxMu.Unlock()
	for _, sess := range s.sess.all() {
		sess.markContext()
	}
}

// currentContextMsg is the context message to send now.
func (s *Server) currentContextMsg() []byte {
	if p := s.sess.ctxMsg.Load(); p != nil {
		return *p
	}
	msg, err := notification(ide.MethodContextUpdate, s.Context())
	if err != nil {
		s.log.Error("encoding context update", "err", err)
		return nil
	}
	s.sess.ctxMsg.CompareAndSwap(nil, &msg)
	return *s.sess.ctxMsg.Load()
}

// broadcast queues a notification for every session.
func (s *Server) broadcast(method string, params any) {
	msg, err := notification(method, params)
	if err != nil {
		s.log.Error("encoding notification", "method", method, "err", err)
		return
	}
	for _, sess := range s.sess.all() {
		s.enqueueOrClose(sess, msg)
	}
}

// enqueueOrClose queues msg for sess, or closes the session when its
// outbox is full.
func (s *Server) enqueueOrClose(sess *session, msg []byte) {
	if !sess.enqueue(msg, s.cfg.MaxOutbox, s.cfg.MaxOutboxBytes) {
		s.log.Warn("closing a session that does not read its event stream: its outbox is full; its client must reconnect", "session", sess.id, "max_messages", s.cfg.MaxOutbox, "max_bytes", s.cfg.MaxOutboxBytes)
		s.sess.remove(sess.id)
	}
}

func notification(method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// eventStream is the response writer of one GET event stream: serveGet
// writes its headers through it, the session's pump the events. Writes
// are serialised and refused once the handler has returned.
type eventStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	rc      *http.ResponseController
	cancel  context.CancelFunc
	// meter tells what the client's end has received of the connection.
	meter deliveryMeter
	// lastEventID is the client's Last-Event-ID, 0 when it sent none.
	lastEventID uint64
	// beforeWrite, when a test sets it (Server.testBeforeEventWrite),
	// runs before each event's bytes are written, after the stream is
	// known open: a test makes the client's end go away there, as a real
	// client's may at any moment.
	beforeWrite func(msg []byte)

	mu      sync.Mutex
	done    bool
	started chan struct{} // closed at the handler's first flush
	ended   chan struct{} // closed when the handler has returned
	once    sync.Once
}

func newEventStream(w http.ResponseWriter, cancel context.CancelFunc, meter deliveryMeter, lastEventID uint64) *eventStream {
	f, _ := w.(http.Flusher)
	return &eventStream{
		w: w, flusher: f, rc: http.NewResponseController(w), cancel: cancel,
		meter: meter, lastEventID: lastEventID,
		started: make(chan struct{}), ended: make(chan struct{}),
	}
}

// abort ends the stream now, even while a write to a client that reads
// nothing is blocked: the expired deadline fails that write.
func (e *eventStream) abort() {
	e.cancel()
	_ = e.rc.SetWriteDeadline(time.Now())
}

func (e *eventStream) Header() http.Header { return e.w.Header() }

func (e *eventStream) WriteHeader(status int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done {
		e.w.WriteHeader(status)
	}
}

// Flush sends the headers; the stream's first flush lets its pump start.
func (e *eventStream) Flush() {
	e.mu.Lock()
	if !e.done && e.flusher != nil {
		e.flusher.Flush()
	}
	e.mu.Unlock()
	e.once.Do(func() { close(e.started) })
}

// finish refuses every later write: the handler has returned.
func (e *eventStream) finish() {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
}

var errStreamDone = errors.New("event stream ended")

// writeEvent writes one SSE event, with id when it is not 0, and flushes
// it. It returns where the event ends among the bytes sent on the
// connection: what the outbox waits to see acknowledged.
func (e *eventStream) writeEvent(id uint64, msg []byte) (end int64, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return 0, errStreamDone
	}
	if e.beforeWrite != nil {
		e.beforeWrite(msg)
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
	if id != 0 {
		_, err = fmt.Fprintf(e.w, "id: %d\nevent: message\ndata: %s\n\n", id, msg)
	} else {
		_, err = fmt.Fprintf(e.w, "event: message\ndata: %s\n\n", msg)
	}
	if err != nil {
		return 0, err
	}
	// A flush that fails (the deadline passed) reports the message as not
	// sent: it stays in the outbox for the session's next stream.
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	_ = e.rc.SetWriteDeadline(time.Time{})
	return e.meter.Sent(), nil
}

// pump delivers the session's notifications on stream st until the stream
// ends, and pings it every interval. Only one stream of a session writes
// at a time (session.writer): a newer one waits for the older to stop and
// give back what its client has not received.
func (s *Server) pump(ctx context.Context, sess *session, st *eventStream) {
	select {
	case <-st.started:
	case <-ctx.Done():
		return
	}
	select {
	case sess.writer <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() {
		sess.withOutbox((*outbox).stop)
		<-sess.writer
		sess.signal()
	}()
	sess.withOutbox(func(o *outbox) { o.start(st.meter, st.lastEventID) })
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	closing := false
	for {
		if !s.writePending(sess, st) {
			st.cancel()
			return
		}
		if closing {
			// Everything queued before the shutdown is written.
			st.cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-sess.closing:
			closing = true
		case <-sess.wake:
		case <-ping.C:
			if _, err := st.writeEvent(0, pingMessage); err != nil {
				st.cancel()
				return
			}
			sess.withOutbox((*outbox).settle)
		}
	}
}

// writePending writes what the session's outbox holds for st: the latest
// context when asked for, then the messages not yet written, each
// recorded as written once flushed. It reports false when a write failed.
func (s *Server) writePending(sess *session, st *eventStream) bool {
	var sendCtx bool
	var msgs [][]byte
	sess.withOutbox(func(o *outbox) { sendCtx, msgs = o.pending() })
	// The context is read after pending cleared its mark: an update that
	// lands in between is sent now and once more, never lost.
	if sendCtx {
		if msg := s.currentContextMsg(); msg != nil {
			var id uint64
			sess.withOutbox(func(o *outbox) { id = o.nextID() })
			if _, err := st.writeEvent(id, msg); err != nil {
				return false
			}
		}
	}
	for _, m := range msgs {
		var id uint64
		sess.withOutbox(func(o *outbox) { id = o.nextID() })
		end, err := st.writeEvent(id, m)
		if err != nil {
			return false
		}
		sess.withOutbox(func(o *outbox) { o.wrote(id, end) })
	}
	sess.withOutbox((*outbox).settle)
	return true
}
