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
	ctxPending bool
	queue      [][]byte
	queueBytes int
	streams    map[*eventStream]struct{}
	wake       chan struct{}

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
	if len(s.queue)+1 > maxCount || s.queueBytes+len(msg) > maxBytes {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, msg)
	s.queueBytes += len(msg)
	s.mu.Unlock()
	s.signal()
	return true
}

// markContext asks for the latest context to be sent to the session.
func (s *session) markContext() {
	s.mu.Lock()
	s.ctxPending = true
	s.mu.Unlock()
	s.signal()
}

func (s *session) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns what is waiting for the session: whether it needs the
// latest context, and the queued messages in order.
func (s *session) take() (bool, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, q := s.ctxPending, s.queue
	s.ctxPending, s.queue, s.queueBytes = false, nil, 0
	return ctx, q
}

// putBack returns what could not be written, ahead of newer messages, and
// wakes the session's other event stream if it has one: a client that
// reconnected before its old stream was found dead gets them there.
func (s *session) putBack(ctx bool, msgs [][]byte) {
	s.mu.Lock()
	s.ctxPending = s.ctxPending || ctx
	s.queue = append(append([][]byte(nil), msgs...), s.queue...)
	for _, m := range msgs {
		s.queueBytes += len(m)
	}
	s.mu.Unlock()
	s.signal()
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

// eventStream is the response writer of one GET event stream. The SDK's
// GET handler writes its headers and events through it; the session's
// pump writes our notifications between them. Writes are serialised and
// refused once the handler has returned.
type eventStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	rc      *http.ResponseController
	cancel  context.CancelFunc

	mu      sync.Mutex
	done    bool
	started chan struct{} // closed at the handler's first flush
	ended   chan struct{} // closed when the handler has returned
	once    sync.Once
}

func newEventStream(w http.ResponseWriter, cancel context.CancelFunc) *eventStream {
	f, _ := w.(http.Flusher)
	return &eventStream{w: w, flusher: f, rc: http.NewResponseController(w), cancel: cancel, started: make(chan struct{}), ended: make(chan struct{})}
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

func (e *eventStream) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return 0, errStreamDone
	}
	return e.w.Write(p)
}

// Flush implements http.Flusher; without it the SDK refuses the GET.
func (e *eventStream) Flush() {
	e.mu.Lock()
	if !e.done && e.flusher != nil {
		e.flusher.Flush()
	}
	e.mu.Unlock()
	e.once.Do(func() { close(e.started) })
}

// Unwrap lets http.ResponseController reach the connection.
func (e *eventStream) Unwrap() http.ResponseWriter { return e.w }

// finish refuses every later write: the handler has returned.
func (e *eventStream) finish() {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
}

var errStreamDone = errors.New("event stream ended")

// writeEvent writes one SSE event and flushes it.
func (e *eventStream) writeEvent(msg []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return errStreamDone
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
	if _, err := fmt.Fprintf(e.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return err
	}
	// A flush that fails (the deadline passed) reports the message as not
	// sent, so it is put back for the session's next stream.
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	_ = e.rc.SetWriteDeadline(time.Time{})
	return nil
}

// pump delivers the session's notifications on stream st until the stream
// ends, and pings it every interval.
func (s *Server) pump(ctx context.Context, sess *session, st *eventStream) {
	select {
	case <-st.started:
	case <-ctx.Done():
		return
	}
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	closing := false
	for {
		// Take first, then read the context: an update that lands in
		// between is sent now and once more, never lost.
		sendCtx, msgs := sess.take()
		if sendCtx {
			if msg := s.currentContextMsg(); msg != nil {
				if err := st.writeEvent(msg); err != nil {
					sess.putBack(true, msgs)
					st.cancel()
					return
				}
			}
		}
		for i, m := range msgs {
			if err := st.writeEvent(m); err != nil {
				sess.putBack(false, msgs[i:])
				st.cancel()
				return
			}
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
			if err := st.writeEvent(pingMessage); err != nil {
				st.cancel()
				return
			}
		}
	}
}
