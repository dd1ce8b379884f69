package companion

// outbox holds, in order, the notifications a session must receive (the
// diff outcomes above all), from the oldest its client is not known to
// have received. A message leaves it only once delivered: when the
// connection of the stream it was written on says the client's end has
// acknowledged its bytes (httpguard.Delivery), or when the client, opening
// a stream again, names it or a later event in Last-Event-ID. A write that
// succeeded is not enough: to a client that has just closed its stream it
// goes into the socket and is never read. A stream that ends gives back
// what it did not deliver, to be written again, in order, on the next.
//
// The latest context is not queued: it is asked for (ctx), sent first on
// every stream and whenever it changes, and a lost one is replaced by the
// next stream's.
//
// Every event a session's streams carry has an id (SSE's id field), given
// when it is written and growing across the session's streams, so that a
// client's Last-Event-ID names a point in everything it has read.
//
// An outbox is not safe for concurrent use: its session's mutex guards it,
// and only the session's one writing stream (its pump) writes and settles.
type outbox struct {
	entries []outEntry
	bytes   int
	// written is how many entries, from the first, are written on the
	// current stream and not yet known delivered.
	written int
	// lastID is the last event id given on any stream of the session.
	lastID uint64
	// ctx says the latest context is to be sent.
	ctx bool
	// meter is the current stream's connection; nil between streams.
	meter deliveryMeter
}

// outEntry is one queued message.
type outEntry struct {
	msg []byte
	// id is the event id the message was last written with (0: never).
	id uint64
	// end is where the message ends among the bytes sent on the current
	// stream's connection, once written there.
	end int64
}

// deliveryMeter is what the outbox needs of a connection
// (httpguard.Delivery).
type deliveryMeter interface {
	// Sent is how many bytes have been written on the connection.
	Sent() int64
	// Acked is how many of them the peer has acknowledged; ok is false
	// when that cannot be known, and then a write counts as delivered.
	Acked() (n int64, ok bool)
}

// add queues msg. It reports false, queueing nothing, when the outbox
// would pass its bounds (maxCount messages, maxBytes bytes) even after
// dropping what has been delivered: the caller then closes the session.
func (o *outbox) add(msg []byte, maxCount, maxBytes int) bool {
	if len(o.entries)+1 > maxCount || o.bytes+len(msg) > maxBytes {
		o.settle()
		if len(o.entries)+1 > maxCount || o.bytes+len(msg) > maxBytes {
			return false
		}
	}
	o.entries = append(o.entries, outEntry{msg: msg})
	o.bytes += len(msg)
	return true
}

// start makes m the connection of the session's writing stream. last,
// when not zero, is the client's Last-Event-ID: it has read every event up
// to that one, so the messages written with those ids leave the outbox.
func (o *outbox) start(m deliveryMeter, last uint64) {
	o.meter = m
	o.ctx = true
	if last == 0 || last > o.lastID {
		return
	}
	kept := o.entries[:0]
	for _, e := range o.entries {
		if e.id != 0 && e.id <= last {
			o.bytes -= len(e.msg)
			continue
		}
		kept = append(kept, e)
	}
	clear(o.entries[len(kept):])
	o.entries = kept
}

// pending says whether the context is to be sent, and returns the
// messages not yet written on the current stream, in order; the writer
// reports each with wrote before the next.
func (o *outbox) pending() (ctx bool, msgs [][]byte) {
	ctx, o.ctx = o.ctx, false
	for _, e := range o.entries[o.written:] {
		msgs = append(msgs, e.msg)
	}
	return ctx, msgs
}

// nextID gives the id of the next event written.
func (o *outbox) nextID() uint64 {
	o.lastID++
	return o.lastID
}

// wrote records that the first message not yet written was, with event
// id, ending at byte end of the connection.
func (o *outbox) wrote(id uint64, end int64) {
	o.entries[o.written].id = id
	o.entries[o.written].end = end
	o.written++
}

// settle drops the written messages the client's end has received.
func (o *outbox) settle() {
	if o.written == 0 || o.meter == nil {
		return
	}
	acked, known := o.meter.Acked()
	n := 0
	for n < o.written && (!known || o.entries[n].end <= acked) {
		o.bytes -= len(o.entries[n].msg)
		n++
	}
	o.written -= n
	o.entries = append(o.entries[:0], o.entries[n:]...)
	clear(o.entries[len(o.entries) : len(o.entries)+n])
}

// stop ends the current stream: what it delivered leaves, the rest waits
// for the next stream, and a context it may have lost is sent again.
func (o *outbox) stop() {
	o.settle()
	o.written = 0
	o.meter = nil
	o.ctx = true
}
