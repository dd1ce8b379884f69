package jsonrpc

import (
	"encoding/json"
	"strconv"
	"sync"
)

// maxCancelled bounds the ids of cancelled calls remembered so that their
// late answers are dropped quietly: a peer that never answers them costs
// no more than this.
const maxCancelled = 1024

// pending numbers the calls sent to the peer and hands each answer to the
// call waiting for it.
type pending struct {
	mu      sync.Mutex
	next    int64
	waiting map[int64]chan message
	// cancelled holds the calls given up with a cancel notification: the
	// peer still answers them (LSP: RequestCancelled), and nobody waits.
	cancelled map[int64]bool
	closed    bool
}

func newPending() *pending {
	return &pending{waiting: map[int64]chan message{}, cancelled: map[int64]bool{}}
}

// add registers a new call; false once the peer is gone.
func (p *pending) add() (int64, chan message, bool) {
	ch := make(chan message, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, nil, false
	}
	p.next++
	p.waiting[p.next] = ch
	return p.next, ch, true
}

// forget drops a call nobody waits for any more, and reports whether it
// was still unanswered. cancel marks it for a peer that is told and
// answers it anyway, so that the answer is dropped quietly.
func (p *pending) forget(id int64, cancel bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, waiting := p.waiting[id]
	delete(p.waiting, id)
	if waiting && cancel {
		if len(p.cancelled) >= maxCancelled {
			clear(p.cancelled)
		}
		p.cancelled[id] = true
	}
	return waiting
}

// deliver hands m to the call with id. It returns the id as text, for the
// log, and whether a call was waiting; expected is true as well for the
// answer to a cancelled call.
func (p *pending) deliver(id json.RawMessage, m message) (n string, delivered, expected bool) {
	v, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return string(id), false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancelled[v] {
		delete(p.cancelled, v)
		return string(id), false, true
	}
	ch, ok := p.waiting[v]
	delete(p.waiting, v)
	if ok {
		ch <- m // buffered, and close cannot close ch meanwhile
	}
	return string(id), ok, ok
}

// close fails every call still waiting, and those to come: the peer is
// gone. It reports whether this call closed it.
func (p *pending) close() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.closed = true
	for id, ch := range p.waiting {
		close(ch)
		delete(p.waiting, id)
	}
	return true
}
