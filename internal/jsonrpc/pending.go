// Package jsonrpc holds what gemkit's JSON-RPC 2.0 peers on a stream share
// whatever their framing (the stdio editor protocol's lines, LSP's
// Content-Length frames): the requests sent to the editor and waiting for
// its answer, and which ids may be echoed.
package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Pending numbers the requests sent to a peer and hands each answer M (the
// peer's response message) to the request waiting for it.
type Pending[M any] struct {
	closedErr error
	next      atomic.Int64
	mu        sync.Mutex
	waiting   map[int64]chan M
	closed    bool
}

// NewPending returns a Pending whose requests fail with closedErr once
// Close has been called.
func NewPending[M any](closedErr error) *Pending[M] {
	return &Pending[M]{closedErr: closedErr, waiting: map[int64]chan M{}}
}

// Call sends a request with a fresh id through send and waits for its
// answer, at most timeout (none when 0) or until ctx ends.
func (p *Pending[M]) Call(ctx context.Context, timeout time.Duration, method string, send func(id int64) error) (M, error) {
	var zero M
	id := p.next.Add(1)
	ch := make(chan M, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return zero, p.closedErr
	}
	p.waiting[id] = ch
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		delete(p.waiting, id)
		p.mu.Unlock()
	}
	if err := send(id); err != nil {
		forget()
		return zero, fmt.Errorf("send %s to the editor: %w", method, err)
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return zero, p.closedErr
		}
		return m, nil
	case <-expired:
		forget()
		return zero, fmt.Errorf("the editor did not answer %s within %v", method, timeout)
	case <-ctx.Done():
		forget()
		return zero, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Deliver hands m to the request with id; false (and the id, for the
// log) when none waits for it: a late answer, or an id never used.
func (p *Pending[M]) Deliver(id json.RawMessage, m M) (string, bool) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return string(id), false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.waiting[n]
	delete(p.waiting, n)
	if ok {
		ch <- m // buffered, and Close cannot close ch meanwhile
	}
	return string(id), ok
}

// Close fails every request still waiting, and those to come: the peer is
// gone. It reports whether this call closed it.
func (p *Pending[M]) Close() bool {
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

// ValidID returns id when it may be echoed in a reply (a string or a
// number), else nil, which is sent as null.
func ValidID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	if id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9') {
		return id
	}
	return nil
}
