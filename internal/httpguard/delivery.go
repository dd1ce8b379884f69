package httpguard

import (
	"net"
	"net/http"
)

// Delivery tells how much of what a server wrote on a request's
// connection the client's end has received. A write that net/http
// reports done has only reached this machine's socket buffer: to a
// client that has just closed its end, the bytes are sent and never
// received. A stream whose messages must not be lost (the companion's
// event streams) counts a message delivered only once Acked covers it.
type Delivery struct{ c *conn }

// DeliveryOf is the meter of r's connection; its methods say "unknown"
// (Acked's ok false) when r did not come through a [Guard.Server] on a
// [Guard.Listener].
func DeliveryOf(r *http.Request) Delivery { return Delivery{connOf(r)} }

// Sent is how many bytes have been handed to the connection's socket so
// far, response headers and framing included: the offset at which
// whatever was flushed last ends.
func (d Delivery) Sent() int64 {
	if d.c == nil {
		return 0
	}
	return d.c.sent.Load()
}

// Acked is how many of the bytes counted by Sent the peer's end has
// acknowledged; once the connection is closed, how many it had when it
// was. ok is false where the system cannot tell (not Linux, not TCP):
// callers then take a flushed write as delivered.
func (d Delivery) Acked() (n int64, ok bool) {
	if d.c == nil {
		return 0, false
	}
	if d.c.closed.Load() {
		n := d.c.final.Load()
		return n, n >= 0
	}
	return d.c.ackedNow()
}

// ackedNow asks the socket how much of what was sent its peer has
// acknowledged.
func (c *conn) ackedNow() (int64, bool) {
	tc, isTCP := c.Conn.(*net.TCPConn)
	if !isTCP {
		return 0, false
	}
	// Sent is read before the queue: a write between the two can only
	// make the answer smaller than the truth, never larger.
	sent := c.sent.Load()
	unacked, ok := unackedBytes(tc)
	if !ok {
		return 0, false
	}
	return max(sent-unacked, 0), true
}
