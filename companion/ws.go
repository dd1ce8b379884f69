package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// The WebSocket library stays in this file: the Claude Code endpoint and
// /stream see only wsPeer.

const (
	// wsMaxMessage bounds one incoming message, as ide.MaxRequestBody
	// bounds a request body on /mcp.
	wsMaxMessage = ide.MaxRequestBody
	// wsQueue is how many outgoing messages may wait for a peer that does
	// not read; a peer that falls that far behind is disconnected rather
	// than let the queue grow.
	wsQueue = 1024
	// wsMaxInFlight bounds the requests of one peer handled at once (an
	// openDiff waits for the person, so a few are expected).
	wsMaxInFlight = 32
	// wsWriteTimeout bounds one write to a peer.
	wsWriteTimeout = 10 * time.Second
)

// wsPeer is one MCP client over WebSocket: JSON-RPC messages, one per text
// message, both ways.
type wsPeer struct {
	c      *websocket.Conn
	log    *slog.Logger
	out    chan wsOut
	ctx    context.Context
	cancel context.CancelFunc

	// meter tells what the peer's end has received of the connection;
	// sent holds the labelled messages written and not yet known
	// received (the writer's alone until it has ended, writerDone).
	meter      deliveryMeter
	sent       []wsSent
	writerDone chan struct{}
	// lost, when set, hears of each labelled message the peer went
	// without: never written, or written and not received when the
	// connection ended.
	lost func(label string)

	closeOnce sync.Once
	inFlight  chan struct{}
	// gone is set when the peer's end went away (a read failed that no
	// close of ours began).
	gone atomic.Bool

	// A graceful close (closeFlushed) waits for the handlers at work and
	// for those the person has just answered, not for those still waiting
	// on the person (park), then for the queue.
	mu          sync.Mutex
	busy        int                      // handlers running and not parked
	parked      map[*parkedWait]struct{} // handlers waiting on the person
	draining    bool                     // closeFlushed began: no new request
	settled     chan struct{}            // closed once quiet while draining
	closeCode   websocket.StatusCode
	closeReason string
	// info is what the peer said of itself at initialize; conn is its
	// connection, to find its process (Server.findPeer).
	info clientInfo
	conn peerConn
	// beforeWrite, when a test sets it (Server.testBeforeEventWrite),
	// runs before each message is written.
	beforeWrite func(msg []byte)
}

// wsOut is a message to write; label, when not "", names what it carries
// for a person (an outcome, an answer), to be told if it is lost.
type wsOut struct {
	msg   []byte
	label string
}

// wsSent is a labelled message written, and where it ends among the
// bytes sent on the connection.
type wsSent struct {
	label string
	end   int64
}

// acceptWS upgrades r to a WebSocket offering subprotocol (when not
// empty). Origin and Host are checked by the caller's guard before this;
// the library's own origin check stays on as a second wall (a request
// with no Origin header passes it).
func acceptWS(w http.ResponseWriter, r *http.Request, subprotocol string, log *slog.Logger) (*wsPeer, error) {
	opts := &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}
	if subprotocol != "" {
		opts.Subprotocols = []string{subprotocol}
	}
	// A 101 carries no Date (net/http adds one to every response whose
	// header map lacks the key): the client has no use for it, and
	// claudecode.nvim's 101 has none either.
	w.Header()["Date"] = nil
	c, err := websocket.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(wsMaxMessage)
	ctx, cancel := context.WithCancel(context.Background())
	p := &wsPeer{
		c: c, log: log, out: make(chan wsOut, wsQueue),
		ctx: ctx, cancel: cancel, inFlight: make(chan struct{}, wsMaxInFlight),
		meter: httpguard.DeliveryOf(r), writerDone: make(chan struct{}),
	}
	p.conn = peerConnOf(r)
	return p, nil
}

// send queues msg; a peer whose queue is full is disconnected.
func (p *wsPeer) send(msg []byte) { p.sendLabelled(msg, "") }

// sendLabelled queues msg, which carries what label names for a person:
// if the peer goes without it, p.lost hears of it.
func (p *wsPeer) sendLabelled(msg []byte, label string) {
	if p.ctx.Err() != nil {
		p.tellLost(label)
		return
	}
	select {
	case <-p.ctx.Done():
		p.tellLost(label)
	case p.out <- wsOut{msg, label}:
	default:
		p.log.Warn("websocket peer does not read its messages; disconnecting", "queued", wsQueue)
		p.close(websocket.StatusPolicyViolation, "too many unread messages")
		p.tellLost(label)
	}
}

func (p *wsPeer) tellLost(label string) {
	if label != "" && p.lost != nil {
		p.lost(label)
	}
}

func (p *wsPeer) sendJSON(v any, label string) {
	b, err := json.Marshal(v)
	if err != nil {
		p.log.Error("encoding websocket message", "err", err)
		return
	}
	p.sendLabelled(b, label)
}

// close ends the connection with code and reason. Once the closing
// handshake has ended (a peer that answers it has read everything before
// it) and the writer has stopped, the labelled messages the peer did not
// receive are told (reportLost).
func (p *wsPeer) close(code websocket.StatusCode, reason string) {
	p.closeOnce.Do(func() {
		gone := p.gone.Load()
		p.cancel()
		go func() {
			if gone {
				// Nothing more comes from a peer that has gone: what
				// its end acknowledged is known now, not after a
				// handshake that waits seconds for an answer.
				<-p.writerDone
				p.reportLost()
				_ = p.c.Close(code, reason)
				return
			}
			_ = p.c.Close(code, reason)
			<-p.writerDone
			p.reportLost()
		}()
	})
}

// reportLost tells of each labelled message the peer has not received:
// those written and not acknowledged by its end, then those never
// written.
func (p *wsPeer) reportLost() {
	p.settle()
	for _, s := range p.sent {
		p.tellLost(s.label)
	}
	p.sent = nil
	for {
		select {
		case o := <-p.out:
			p.tellLost(o.label)
		default:
			return
		}
	}
}

// settle drops the written labelled messages the peer's end has
// received; where that cannot be known, a write counts as received.
func (p *wsPeer) settle() {
	acked, known := p.meter.Acked()
	n := 0
	for n < len(p.sent) && (!known || p.sent[n].end <= acked) {
		n++
	}
	p.sent = append(p.sent[:0], p.sent[n:]...)
}

// run serves the peer until it goes, ctx ends or it stops answering pings:
// handle gets each incoming message in the reading goroutine and must not
// block (it starts a goroutine through p.spawn for slow work). Every
// pingEvery a ping must be answered within pingEvery, else the peer is
// considered gone: a WebSocket that stays open is how a client stays
// connected, so idle expiry is of dead peers, not of quiet ones.
func (p *wsPeer) run(ctx context.Context, pingEvery time.Duration, handle func(msg []byte)) {
	defer p.close(websocket.StatusNormalClosure, "")
	go func() {
		select {
		case <-ctx.Done():
			p.close(websocket.StatusGoingAway, "server shutting down")
		case <-p.ctx.Done():
		}
	}()
	go p.writeLoop()
	go p.pingLoop(pingEvery)
	for {
		typ, msg, err := p.c.Read(p.ctx)
		if err != nil {
			if p.ctx.Err() == nil {
				p.gone.Store(true)
			}
			// An over-long message makes the library close with 1009.
			var ce websocket.CloseError
			if !errors.As(err, &ce) && p.ctx.Err() == nil {
				p.log.Debug("websocket read ended", "err", err)
			}
			return
		}
		if typ != websocket.MessageText {
			p.close(websocket.StatusUnsupportedData, "text messages only")
			return
		}
		handle(msg)
	}
}

func (p *wsPeer) writeLoop() {
	defer close(p.writerDone)
	for {
		select {
		case <-p.ctx.Done():
			return
		case o := <-p.out:
			if o.msg == nil {
				// closeFlushed's mark: everything queued before it is written.
				p.mu.Lock()
				code, reason := p.closeCode, p.closeReason
				p.mu.Unlock()
				p.close(code, reason)
				return
			}
			if p.beforeWrite != nil {
				p.beforeWrite(o.msg)
			}
			ctx, cancel := context.WithTimeout(p.ctx, wsWriteTimeout)
			err := p.c.Write(ctx, websocket.MessageText, o.msg)
			cancel()
			if err != nil {
				p.tellLost(o.label)
				p.close(websocket.StatusGoingAway, "write failed")
				return
			}
			if o.label != "" {
				p.sent = append(p.sent, wsSent{o.label, p.meter.Sent()})
				p.settle()
			}
		}
	}
}

// closeFlushed closes the peer with code and reason once the replies its
// handlers are preparing are queued and everything queued is written, or
// when ctx ends, whichever comes first. A handler waiting on the person
// (park) is not waited for. Requests that arrive meanwhile are refused.
// At shutdown this lets the answers given just before it (the diffs
// rejected on Ctrl-C) reach the client rather than die in the queue.
func (p *wsPeer) closeFlushed(ctx context.Context, code websocket.StatusCode, reason string) {
	p.mu.Lock()
	p.draining = true
	p.closeCode, p.closeReason = code, reason
	var settled chan struct{}
	if !p.quietLocked() {
		p.settled = make(chan struct{})
		settled = p.settled
	}
	p.mu.Unlock()
	defer p.close(code, reason)
	if settled != nil {
		select {
		case <-settled:
		case <-ctx.Done():
			return
		case <-p.ctx.Done():
			return
		}
	}
	select {
	case p.out <- wsOut{}:
	case <-ctx.Done():
		return
	case <-p.ctx.Done():
		return
	}
	select {
	case <-p.ctx.Done():
	case <-ctx.Done():
	}
}

// closeAllFlushed closes every peer at shutdown, each once what it was
// sent is written (closeFlushed), all within ctx.
func closeAllFlushed(ctx context.Context, peers []*wsPeer) {
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() { p.closeFlushed(ctx, websocket.StatusGoingAway, "server shutting down") })
	}
	wg.Wait()
}

// parkedWait is a handler waiting on the person; answered says whether
// the answer has come and the handler is about to reply.
type parkedWait struct{ answered func() bool }

// quietLocked says whether no reply is under way: no handler at work, no
// parked one answered. p.mu is held.
func (p *wsPeer) quietLocked() bool {
	if p.busy > 0 {
		return false
	}
	for w := range p.parked {
		if w.answered() {
			return false
		}
	}
	return true
}

// work counts d handlers in (1) or out (-1) of work, and tells a waiting
// closeFlushed once no reply is under way.
func (p *wsPeer) work(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy += d
	if p.settled != nil && p.quietLocked() {
		close(p.settled)
		p.settled = nil
	}
}

// park marks the handler of ctx as waiting on the person until the
// returned function is called; answered says when the person has
// answered. A graceful close waits for answered handlers, not for the
// others.
func park(ctx context.Context, answered func() bool) (unpark func()) {
	p, ok := ctx.Value(wsPeerKey{}).(*wsPeer)
	if !ok {
		return func() {}
	}
	w := &parkedWait{answered: answered}
	p.mu.Lock()
	if p.parked == nil {
		p.parked = map[*parkedWait]struct{}{}
	}
	p.parked[w] = struct{}{}
	p.mu.Unlock()
	p.work(-1)
	return func() {
		p.mu.Lock()
		delete(p.parked, w)
		p.busy++
		p.mu.Unlock()
	}
}

func (p *wsPeer) pingLoop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(p.ctx, every)
			err := p.c.Ping(ctx)
			cancel()
			if err != nil {
				p.log.Debug("websocket peer did not answer a ping; disconnecting", "err", err)
				p.close(websocket.StatusPolicyViolation, "ping not answered")
				return
			}
		}
	}
}

// spawn runs f in a goroutine bounded by wsMaxInFlight, with the peer in
// its context; it says why not when the peer has too many requests in
// flight or is closing.
func (p *wsPeer) spawn(f func(ctx context.Context)) error {
	select {
	case p.inFlight <- struct{}{}:
	default:
		return fmt.Errorf("too many requests in flight (at most %d)", wsMaxInFlight)
	}
	p.mu.Lock()
	if p.draining {
		p.mu.Unlock()
		<-p.inFlight
		return errors.New("the server is shutting down")
	}
	p.busy++
	p.mu.Unlock()
	go func() {
		defer func() {
			p.work(-1)
			<-p.inFlight
		}()
		f(context.WithValue(p.ctx, wsPeerKey{}, p))
	}()
	return nil
}

// rpcMessage is the part of a JSON-RPC message the endpoints look at
// before handing it on, its members read by their exact names
// (readRPC), as the real clients' SDKs and go-sdk read them.
type rpcMessage = mcpwire.Message

// readRPC reads one JSON-RPC message with MCP's one reader.
func readRPC(b []byte) (rpcMessage, error) { return mcpwire.Read(b) }

// toolName is the tool a tools/call's params name, "" when they name
// none or cannot be read.
func toolName(params json.RawMessage) string {
	p, _ := mcpwire.ReadParams(params)
	return p.Name
}

func rpcError(id json.RawMessage, code int, msg string) map[string]any {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
}
